// Command dataflow is a receiver for a streaming DATAFLOW job: each fire of each item finds a finite backlog
// of records, and the receiver works through it one batch per POST, answering {"hasMore": true} until the
// backlog is empty. ejserver re-POSTs the item at once while hasMore is true (iteration 2, 3, ... with
// webhook-id "{executionId}.{n}"), and stops at {"hasMore": false}.
//
//	go run ./examples/webhooks/dataflow -listen 127.0.0.1:9091 -backlog 25 -batch 10
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
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
	addr := flag.String("listen", envOr("RECEIVER_ADDR", "127.0.0.1:9091"), "listen address (env RECEIVER_ADDR)")
	backlog := flag.Int("backlog", 25, "records waiting for each item at each fire")
	batch := flag.Int("batch", 10, "records processed per POST")
	flag.Parse()
	if *backlog < 0 || *batch < 1 {
		fmt.Fprintln(os.Stderr, "dataflow: -backlog must be >= 0 and -batch >= 1")
		os.Exit(2)
	}
	if err := run(*addr, os.Getenv("WEBHOOK_SECRET"), *backlog, *batch); err != nil {
		fmt.Fprintln(os.Stderr, "dataflow:", err)
		os.Exit(1)
	}
}

func run(addr, secret string, backlog, batch int) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return err
	}
	verifying := "signatures NOT checked (set WEBHOOK_SECRET to verify)"
	if secret != "" {
		verifying = "verifying signatures with WEBHOOK_SECRET"
	}
	fmt.Printf("dataflow receiver listening on http://%s, %s; %d records per item per fire, %d per POST\n",
		ln.Addr(), verifying, backlog, batch)
	srv := &http.Server{Handler: newHandler(os.Stdout, secret, backlog, batch), ReadHeaderTimeout: 10 * time.Second}
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
	return nil
}

// backlogs tracks what is left of each item's backlog in the current fire, keyed by executionId (the same
// for every iteration of one item of one fire). An entry is removed when its backlog is drained.
type backlogs struct {
	mu    sync.Mutex
	left  map[string]int
	total int
	batch int
}

// maxOpen bounds the number of fires being worked through at once (entries of abandoned fires are dropped).
const maxOpen = 10000

// take removes the next batch of the fire's backlog: it returns the first record's number (1-based), how
// many records, and how many are left.
func (b *backlogs) take(executionID string) (first, n, left int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	remaining, ok := b.left[executionID]
	if !ok {
		remaining = b.total
		if len(b.left) >= maxOpen {
			for k := range b.left { // drop an arbitrary abandoned fire
				delete(b.left, k)
				break
			}
		}
	}
	n = min(b.batch, remaining)
	first = b.total - remaining + 1
	left = remaining - n
	if left == 0 {
		delete(b.left, executionID)
	} else {
		b.left[executionID] = left
	}
	return first, n, left
}

func newHandler(out io.Writer, secret string, backlog, batch int) http.Handler {
	b := &backlogs{left: map[string]int{}, total: backlog, batch: batch}
	var mu sync.Mutex
	printf := func(format string, args ...any) {
		mu.Lock()
		defer mu.Unlock()
		fmt.Fprintf(out, "%s "+format+"\n", append([]any{time.Now().Format("15:04:05.000")}, args...)...)
	}
	return receiver.Handler(receiver.Options{
		Secret: secret,
		OnReject: func(r *http.Request, status int, err error) {
			printf("✗ rejected a request from %s: %v → %d", r.RemoteAddr, err, status)
		},
		OnDuplicate: func(d receiver.Delivery) { printf("↺ %s: duplicate, answered again without processing", d.ID) },
	}, func(_ context.Context, d receiver.Delivery) (receiver.Response, error) {
		p := d.Payload
		first, n, left := b.take(p.ExecutionID)
		iteration := "iteration " + strconv.Itoa(p.Iteration)
		if p.Iteration == 0 {
			iteration = "not streaming: one batch per fire"
		}
		records := "no records"
		if n > 0 {
			records = fmt.Sprintf("records %d-%d", first, first+n-1)
		}
		printf("%s item %d/%d  %-34s %3d left → hasMore=%-5t  id %s", p.JobName, p.ShardingItem,
			p.ShardingTotalCount, iteration+": "+records, left, left > 0, d.ID)
		return receiver.Response{HasMore: left > 0}, nil
	})
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
