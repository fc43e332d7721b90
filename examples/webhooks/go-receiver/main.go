// Command go-receiver is ejserver's demo webhook receiver: it listens for deliveries, verifies their
// Standard Webhooks signature when WEBHOOK_SECRET is set, drops duplicates (the same webhook-id again), and
// prints one line per delivery. `make run` starts it next to ejserver.
//
//	go run ./examples/webhooks/go-receiver                        # listens on 127.0.0.1:9090
//	WEBHOOK_SECRET=whsec_... go run ./examples/webhooks/go-receiver -listen 127.0.0.1:9090
//	go run ./examples/webhooks/go-receiver -fail-rate 0.3         # answer 500 to 30% to watch retries
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strconv"
	"sync"
	"syscall"
	"time"

	"github.com/ejserver/ejserver/receiver"
)

func main() {
	addr := flag.String("listen", envOr("RECEIVER_ADDR", "127.0.0.1:9090"), "listen address (env RECEIVER_ADDR)")
	failRate := flag.Float64("fail-rate", envFloat("FAIL_RATE", 0), "answer 500 to this fraction of deliveries, to watch ejserver retry (env FAIL_RATE)")
	flag.Parse()
	if err := run(*addr, os.Getenv("WEBHOOK_SECRET"), *failRate); err != nil {
		fmt.Fprintln(os.Stderr, "go-receiver:", err)
		os.Exit(1)
	}
}

func run(addr, secret string, failRate float64) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p := newPrinter(os.Stdout)
	p.banner(ln.Addr().String(), secret != "", failRate)
	srv := &http.Server{
		Handler:           newHandler(p, secret, failRate, rand.Float64),
		ReadHeaderTimeout: 10 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.Serve(ln) }()
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := srv.Shutdown(shutdown); err != nil {
		return err
	}
	if err := <-errc; !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	fmt.Fprintln(os.Stdout, "bye")
	return nil
}

// newHandler is the receiver: receiver.Handler does the verifying, decoding and deduplicating; this prints.
func newHandler(p *printer, secret string, failRate float64, random func() float64) http.Handler {
	mux := http.NewServeMux()
	mux.Handle("/", receiver.Handler(receiver.Options{
		Secret:      secret,
		OnReject:    func(r *http.Request, status int, err error) { p.rejected(r, status, err) },
		OnDuplicate: func(d receiver.Delivery) { p.duplicate(d) },
	}, func(_ context.Context, d receiver.Delivery) (receiver.Response, error) {
		if failRate > 0 && random() < failRate {
			p.delivery(d, false)
			return receiver.Response{}, errors.New("simulated failure")
		}
		p.delivery(d, true)
		return receiver.Response{}, nil
	}))
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return mux
}

// printer writes one aligned, optionally coloured line per event.
type printer struct {
	mu    sync.Mutex
	out   io.Writer
	color bool
	now   func() time.Time
}

func newPrinter(out io.Writer) *printer {
	p := &printer{out: out, now: time.Now}
	if f, ok := out.(*os.File); ok && os.Getenv("NO_COLOR") == "" {
		if st, err := f.Stat(); err == nil && st.Mode()&os.ModeCharDevice != 0 {
			p.color = true
		}
	}
	return p
}

const (
	green, yellow, red, dim, bold, reset = "\033[32m", "\033[33m", "\033[31m", "\033[2m", "\033[1m", "\033[0m"
)

func (p *printer) paint(code, s string) string {
	if !p.color {
		return s
	}
	return code + s + reset
}

func (p *printer) line(format string, args ...any) {
	p.mu.Lock()
	defer p.mu.Unlock()
	fmt.Fprintf(p.out, "%s %s\n", p.paint(dim, p.now().Format("15:04:05.000")), fmt.Sprintf(format, args...))
}

func (p *printer) banner(addr string, verifying bool, failRate float64) {
	mode := p.paint(yellow, "signatures NOT checked (set WEBHOOK_SECRET to verify)")
	if verifying {
		mode = p.paint(green, "verifying signatures with WEBHOOK_SECRET")
	}
	p.line("%s listening on http://%s, %s", p.paint(bold, "go-receiver"), addr, mode)
	if failRate > 0 {
		p.line("answering 500 to %.0f%% of deliveries: watch ejserver retry them", failRate*100)
	}
}

func (p *printer) delivery(d receiver.Delivery, ok bool) {
	mark, note := p.paint(green, "✓"), ""
	if !ok {
		mark, note = p.paint(red, "✗"), p.paint(red, "  → 500 (simulated failure; ejserver retries)")
	}
	pl := d.Payload
	param := "-"
	if pl.ShardingParameter != "" {
		param = strconv.Quote(pl.ShardingParameter)
	}
	extra := ""
	if pl.Iteration > 0 {
		extra += "  iteration " + strconv.Itoa(pl.Iteration)
	}
	if pl.JobParameter != "" {
		extra += "  jobParameter " + strconv.Quote(pl.JobParameter)
	}
	// Pad before painting, so colour codes don't upset the columns.
	p.line("%s %s item %-6s %-14s %-14s attempt %d%s  %s%s", mark, p.paint(bold, fmt.Sprintf("%-12s", pl.JobName)),
		fmt.Sprintf("%d/%d", pl.ShardingItem, pl.ShardingTotalCount), param, pl.Source, pl.Attempt, extra,
		p.paint(dim, "id "+d.ID), note)
}

func (p *printer) duplicate(d receiver.Delivery) {
	p.line("%s %s item %-6s duplicate of a delivery already handled: answered again, not processed  %s",
		p.paint(yellow, "↺"), p.paint(bold, fmt.Sprintf("%-12s", d.Payload.JobName)),
		fmt.Sprintf("%d/%d", d.Payload.ShardingItem, d.Payload.ShardingTotalCount), p.paint(dim, "id "+d.ID))
}

func (p *printer) rejected(r *http.Request, status int, err error) {
	p.line("%s rejected a request from %s: %v → %d", p.paint(red, "✗"), r.RemoteAddr, err, status)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}

func envFloat(key string, def float64) float64 {
	if v, err := strconv.ParseFloat(os.Getenv(key), 64); err == nil {
		return v
	}
	return def
}
