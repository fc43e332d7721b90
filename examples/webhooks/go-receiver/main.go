// Command go-receiver is ejserver's demo webhook receiver: it listens for deliveries, verifies their
// Standard Webhooks signature when WEBHOOK_SECRET is set, drops duplicates (the same webhook-id again), and
// prints one line per delivery. `make run` starts it next to ejserver.
//
//	go run ./examples/webhooks/go-receiver                        # listens on 127.0.0.1:9090
//	WEBHOOK_SECRET=whsec_... go run ./examples/webhooks/go-receiver -listen 127.0.0.1:9090
//	go run ./examples/webhooks/go-receiver -fail-rate 0.3         # answer 500 to 30% to watch retries
//	go run ./examples/webhooks/go-receiver -async -async-work 5s  # answer 202, complete 5s later by callback
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
	failRate := flag.Float64("fail-rate", envFloat("FAIL_RATE", 0), "answer 500 to this fraction of deliveries, to watch ejserver retry (env FAIL_RATE); with -async, complete them with failure")
	async := flag.Bool("async", envBool("ASYNC"), "answer 202 Accepted and complete each item later through ejserver's callbacks (env ASYNC=1)")
	work := flag.Duration("async-work", envDuration("ASYNC_WORK", 5*time.Second), "with -async, how long each item's work takes (env ASYNC_WORK)")
	flag.Parse()
	if !*async {
		*work = 0
	}
	if err := run(*addr, os.Getenv("WEBHOOK_SECRET"), *failRate, *work); err != nil {
		fmt.Fprintln(os.Stderr, "go-receiver:", err)
		os.Exit(1)
	}
}

// run serves until SIGINT or SIGTERM; asyncWork > 0 selects the async mode.
func run(addr, secret string, failRate float64, asyncWork time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	p := newPrinter(os.Stdout)
	p.banner(ln.Addr().String(), secret != "", failRate, asyncWork)
	h := newHandler(p, secret, failRate, rand.Float64)
	var async *receiver.AsyncReceiver
	if asyncWork > 0 {
		h, async = newAsyncHandler(p, secret, failRate, rand.Float64, asyncWork)
	}
	srv := &http.Server{Handler: h, ReadHeaderTimeout: 10 * time.Second}
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
	if async != nil {
		// Items still running after the grace period are cancelled and left to their lease: ejserver POSTs
		// them again when it runs out.
		if err := async.Shutdown(shutdown); err != nil {
			fmt.Fprintln(os.Stdout, "items still running were cancelled; their leases will run out")
		}
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

// asyncSteps is how many parts an item's simulated work has: a progress heartbeat after each but the last.
const asyncSteps = 5

// newAsyncHandler is the async mode: receiver.AsyncHandler answers 202 at once and runs the function below
// in the background; it heartbeats with progress, and its result completes the item through ejserver's
// callback. The AsyncReceiver is returned so that shutdown can wait for the items still running.
func newAsyncHandler(p *printer, secret string, failRate float64, random func() float64, work time.Duration) (http.Handler, *receiver.AsyncReceiver) {
	async := receiver.AsyncHandler(receiver.Options{
		Secret:       secret,
		OnReject:     func(r *http.Request, status int, err error) { p.rejected(r, status, err) },
		OnDuplicate:  func(d receiver.Delivery) { p.duplicate(d) },
		OnAsyncError: func(d receiver.Delivery, err error) { p.asyncError(d, err) },
	}, func(ctx context.Context, d receiver.Delivery, r *receiver.Reporter) error {
		p.accepted(d, work)
		step := time.NewTicker(max(work/asyncSteps, time.Millisecond))
		defer step.Stop()
		for i := 1; i <= asyncSteps; i++ {
			select {
			case <-ctx.Done():
				return ctx.Err() // ejserver says the item is over (or we are shutting down): stop working
			case <-step.C:
			}
			if i == asyncSteps {
				break
			}
			pct, msg := 100*i/asyncSteps, fmt.Sprintf("step %d of %d", i, asyncSteps)
			if lease, err := r.Heartbeat(ctx, pct, msg); err == nil {
				p.progress(d, pct, msg, lease.State)
			}
		}
		if failRate > 0 && random() < failRate {
			p.completing(d, false)
			return errors.New("simulated failure")
		}
		p.completing(d, true)
		return nil
	})
	mux := http.NewServeMux()
	mux.Handle("/", async)
	mux.HandleFunc("GET /healthz", func(w http.ResponseWriter, _ *http.Request) { _, _ = io.WriteString(w, "ok\n") })
	return mux, async
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

func (p *printer) banner(addr string, verifying bool, failRate float64, asyncWork time.Duration) {
	mode := p.paint(yellow, "signatures NOT checked (set WEBHOOK_SECRET to verify)")
	if verifying {
		mode = p.paint(green, "verifying signatures with WEBHOOK_SECRET")
	}
	p.line("%s listening on http://%s, %s", p.paint(bold, "go-receiver"), addr, mode)
	if asyncWork > 0 {
		p.line("async: answering 202 Accepted, then completing each item %v later through ejserver's callback", asyncWork)
		if failRate > 0 {
			p.line("completing %.0f%% of items with failure", failRate*100)
		}
		return
	}
	if failRate > 0 {
		p.line("answering 500 to %.0f%% of deliveries: watch ejserver retry them", failRate*100)
	}
}

func (p *printer) delivery(d receiver.Delivery, ok bool) {
	mark, note := p.paint(green, "✓"), ""
	if !ok {
		mark, note = p.paint(red, "✗"), p.paint(red, "  → 500 (simulated failure; ejserver retries)")
	}
	p.item(mark, d, note)
}

// item prints one delivery's line: job, item, parameter, source, attempt, id, and a note.
func (p *printer) item(mark string, d receiver.Delivery, note string) {
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

func (p *printer) accepted(d receiver.Delivery, work time.Duration) {
	p.item(p.paint(yellow, "⏳"), d, p.paint(yellow, fmt.Sprintf("  → 202 Accepted, working for %v", work)))
}

// short is an item's job and number, for the lines that follow its accepted line.
func (p *printer) short(d receiver.Delivery) string {
	return fmt.Sprintf("%s item %-6s", p.paint(bold, fmt.Sprintf("%-12s", d.Payload.JobName)),
		fmt.Sprintf("%d/%d", d.Payload.ShardingItem, d.Payload.ShardingTotalCount))
}

func (p *printer) progress(d receiver.Delivery, pct int, msg string, state receiver.State) {
	p.line("%s %s %3d%%  %s  (heartbeat: %s)  %s", p.paint(dim, "…"), p.short(d), pct, msg, state, p.paint(dim, "id "+d.ID))
}

func (p *printer) completing(d receiver.Delivery, ok bool) {
	if ok {
		p.line("%s %s done: completing with success  %s", p.paint(green, "✓"), p.short(d), p.paint(dim, "id "+d.ID))
		return
	}
	p.line("%s %s done: completing with failure (simulated)  %s", p.paint(red, "✗"), p.short(d), p.paint(dim, "id "+d.ID))
}

func (p *printer) asyncError(d receiver.Delivery, err error) {
	p.line("%s %s %v  %s", p.paint(red, "!"), p.short(d), err, p.paint(dim, "id "+d.ID))
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

func envBool(key string) bool {
	v, _ := strconv.ParseBool(os.Getenv(key))
	return v
}

func envDuration(key string, def time.Duration) time.Duration {
	if v, err := time.ParseDuration(os.Getenv(key)); err == nil {
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
