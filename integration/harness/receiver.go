package harness

import (
	"crypto/tls"
	"encoding/json"
	"io"
	"log"
	"net"
	"net/http"
	"slices"
	"sync"
	"time"

	"github.com/ejserver/ejserver/receiver"
)

// Delivery is one request a Receiver got.
type Delivery struct {
	ArrivedAt time.Time
	Method    string
	Path      string
	Header    http.Header
	Body      []byte
	Payload   Payload
}

// Payload is the webhook body (the contract's one definition, in the receiver package).
type Payload = receiver.Payload

// Receiver is a real HTTP server that records every delivery and answers as told.
type Receiver struct {
	URL string
	srv *http.Server
	ln  net.Listener

	mu         sync.Mutex
	deliveries []Delivery
	changed    chan struct{}
	// Respond decides the answer (status, body, delay); nil answers 200 at once.
	respond func(d Delivery) (int, string, time.Duration)
}

// NewReceiver starts a receiver on a free loopback port.
func NewReceiver() (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &Receiver{URL: "http://" + ln.Addr().String() + "/hook", ln: ln, changed: make(chan struct{})}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

// NewReceiverTLS is a receiver that serves HTTPS with cfg (its certificate, and ClientAuth for a receiver
// that demands client certificates); its URL names host, which cfg's certificate must hold.
func NewReceiverTLS(cfg *tls.Config, host string) (*Receiver, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	_, port, _ := net.SplitHostPort(ln.Addr().String())
	r := &Receiver{URL: "https://" + net.JoinHostPort(host, port) + "/hook", ln: ln, changed: make(chan struct{})}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, TLSConfig: cfg,
		ErrorLog: log.New(io.Discard, "", 0)} // the refused handshakes the tests provoke
	go func() { _ = r.srv.ServeTLS(ln, "", "") }()
	return r, nil
}

// Respond sets how the receiver answers.
func (r *Receiver) Respond(fn func(d Delivery) (status int, body string, delay time.Duration)) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.respond = fn
}

// Close stops the receiver.
func (r *Receiver) Close() { _ = r.srv.Close() }

func (r *Receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	d := Delivery{ArrivedAt: time.Now(), Method: req.Method, Path: req.URL.Path, Header: req.Header.Clone(), Body: body}
	_ = json.Unmarshal(body, &d.Payload)
	r.mu.Lock()
	r.deliveries = append(r.deliveries, d)
	close(r.changed)
	r.changed = make(chan struct{})
	respond := r.respond
	r.mu.Unlock()
	status, answer, delay := http.StatusOK, `{"ok":true}`, time.Duration(0)
	if respond != nil {
		status, answer, delay = respond(d)
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			return
		}
	}
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_, _ = io.WriteString(w, answer)
}

// Deliveries returns the deliveries so far (a copy), optionally filtered.
func (r *Receiver) Deliveries(keep func(Delivery) bool) []Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []Delivery
	for _, d := range r.deliveries {
		if keep == nil || keep(d) {
			out = append(out, d)
		}
	}
	return out
}

// Reset forgets the deliveries so far.
func (r *Receiver) Reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.deliveries = nil
}

// WaitFor waits until cond holds over the deliveries (re-checked on every arrival) or timeout passes; it
// returns the deliveries and whether cond held.
func (r *Receiver) WaitFor(timeout time.Duration, cond func([]Delivery) bool) ([]Delivery, bool) {
	deadline := time.NewTimer(timeout)
	defer deadline.Stop()
	for {
		r.mu.Lock()
		ds := slices.Clone(r.deliveries)
		ch := r.changed
		r.mu.Unlock()
		if cond(ds) {
			return ds, true
		}
		select {
		case <-ch:
		case <-deadline.C:
			return ds, false
		}
	}
}

// Job returns a filter of one job's deliveries.
func Job(name string) func(Delivery) bool {
	return func(d Delivery) bool { return d.Payload.JobName == name }
}
