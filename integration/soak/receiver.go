package soak

import (
	"bytes"
	"encoding/json"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver/integration/soak/checker"
	"github.com/ejserver/ejserver/receiver"
)

// Receiver modes the nemesis sets per job.
const (
	modeOK   = ""
	modeHang = "hang" // answer long after the job's webhook timeout
	mode5xx  = "5xx"
	mode429  = "429"  // 429 with Retry-After: 1
	modeSlow = "slow" // answer 200 after 1.5-2.5 s
)

// recv is the soak's receivers: one HTTP server, one path per job, recording every request with the answer
// it gave. Jobs in async mode are answered 202 and completed by a callback 1-4 s later; streaming DATAFLOW
// jobs are asked for three iterations.
type recv struct {
	URL string
	srv *http.Server
	ln  net.Listener
	// peers returns the live peers' base URLs, for callbacks whose own peer is gone
	peers func() []string

	mu    sync.Mutex
	ds    []checker.Delivery
	modes map[string]string
	async map[string]bool
	strm  map[string]bool
	// events is the delivery log (JSON lines), written as they happen
	events io.Writer

	wg       sync.WaitGroup // callbacks in flight
	closing  chan struct{}
	callback *http.Client
}

func newRecv(events io.Writer, peers func() []string) (*recv, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &recv{URL: "http://" + ln.Addr().String(), ln: ln, peers: peers, modes: map[string]string{},
		async: map[string]bool{}, strm: map[string]bool{}, events: events, closing: make(chan struct{}),
		callback: &http.Client{Timeout: 3 * time.Second}}
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *recv) setMode(job, mode string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.modes[job] = mode
}

func (r *recv) deliveries() []checker.Delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]checker.Delivery(nil), r.ds...)
}

func (r *recv) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.ds)
}

// close stops the server and waits for the callbacks in flight.
func (r *recv) close() {
	close(r.closing)
	_ = r.srv.Close()
	r.wg.Wait()
}

func (r *recv) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	var p receiver.Payload
	_ = json.Unmarshal(body, &p)
	d := checker.Delivery{Job: p.JobName, Item: p.ShardingItem, ExecutionID: p.ExecutionID, WebhookID: req.Header.Get("webhook-id"), Source: p.Source,
		ScheduledAt: p.ScheduledAt, DueAt: p.DueAt, Instance: p.InstanceID, Attempt: p.Attempt, Iteration: p.Iteration, Arrived: time.Now()}
	r.mu.Lock()
	mode, async, strm := r.modes[p.JobName], r.async[p.JobName], r.strm[p.JobName]
	idx := len(r.ds)
	r.ds = append(r.ds, d)
	r.mu.Unlock()

	status, answer, delay := http.StatusOK, `{"hasMore":false}`, time.Duration(0)
	more := false
	switch mode {
	case modeHang:
		delay = 30 * time.Second
	case mode5xx:
		status = http.StatusServiceUnavailable
	case mode429:
		status = http.StatusTooManyRequests
		w.Header().Set("Retry-After", "1")
	case modeSlow:
		delay = 1500*time.Millisecond + time.Duration(idx%1000)*time.Millisecond
	}
	if status == http.StatusOK {
		switch {
		case async:
			status = http.StatusAccepted
		case strm && p.Iteration < 3:
			answer, more = `{"hasMore":true}`, true
		}
	}
	if delay > 0 {
		select {
		case <-time.After(delay):
		case <-req.Context().Done():
			status = 0 // the client went away first
		}
	}
	if status != 0 {
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(status)
		_, _ = io.WriteString(w, answer)
	}
	r.mu.Lock()
	r.ds[idx].Answered, r.ds[idx].Status, r.ds[idx].More = time.Now(), status, more
	if !more {
		r.ds[idx].Ended = r.ds[idx].Answered
	}
	d = r.ds[idx]
	r.mu.Unlock()
	r.log(d)
	if status == http.StatusAccepted && p.CallbackURL != "" {
		r.wg.Add(1)
		go r.complete(idx, p, time.Second+time.Duration(idx%3000)*time.Millisecond)
	}
}

func (r *recv) log(d checker.Delivery) {
	b, _ := json.Marshal(struct {
		Event string `json:"event"`
		checker.Delivery
	}{"delivery", d})
	r.mu.Lock()
	defer r.mu.Unlock()
	_, _ = r.events.Write(append(b, '\n'))
}

// complete sends an accepted item's completion after delay, to its own peer or, if that one does not answer,
// to the others, for up to 20 s.
func (r *recv) complete(idx int, p receiver.Payload, delay time.Duration) {
	defer r.wg.Done()
	select {
	case <-time.After(delay):
	case <-r.closing:
		return
	}
	_, path, _ := strings.Cut(strings.TrimPrefix(p.CallbackURL, "http://"), "/")
	deadline := time.Now().Add(20 * time.Second)
	for attempt := 0; time.Now().Before(deadline); attempt++ {
		url := p.CallbackURL
		if peers := r.peers(); attempt > 0 && len(peers) > 0 {
			url = peers[attempt%len(peers)] + "/" + path
		}
		req, _ := http.NewRequest(http.MethodPost, url+"/complete", bytes.NewReader([]byte(`{"status":"success"}`)))
		req.Header.Set("Content-Type", "application/json")
		req.Header.Set("Authorization", "Bearer "+p.CallbackToken)
		// sent: it may land whatever the client hears (a peer answered 200 after the client's timeout in
		// seed 2027's replay), so the receiver has reported a success from now on
		r.mu.Lock()
		r.ds[idx].CompletionSent = true
		r.mu.Unlock()
		resp, err := r.callback.Do(req)
		if err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				r.mu.Lock()
				r.ds[idx].Ended, r.ds[idx].Completed = time.Now(), "SUCCEEDED"
				d := r.ds[idx]
				r.mu.Unlock()
				r.log(d)
				return
			}
			if resp.StatusCode == http.StatusConflict || resp.StatusCode == http.StatusGone {
				// the lease ended otherwise (expired, cancelled): the receiver's success was not heard
				r.mu.Lock()
				r.ds[idx].Ended = time.Now()
				r.mu.Unlock()
				return
			}
		}
		select {
		case <-time.After(time.Second):
		case <-r.closing:
			return
		}
	}
	r.mu.Lock()
	r.ds[idx].Ended = time.Now()
	d := r.ds[idx]
	r.mu.Unlock()
	r.log(d) // no answer heard: the lease expires, unless one of the completions sent landed
}
