package webhook

import (
	"bufio"
	"bytes"
	"context"
	"io"
	"net"
	"sync"
	"testing"

	"go.opentelemetry.io/otel/trace"

	"github.com/ejserver/ejserver"
)

// BenchmarkSendItem measures one item's request as the dispatcher makes it: Prepare, then Send, one after
// the other on one goroutine, to a loopback HTTP/1.1 receiver that allocates next to nothing itself, so
// allocs/op and B/op are the sender's (and net/http's) per item. "plain" is ejbench's job (a URL only),
// "signed" a job with a secret and two headers of its own, "peer" ejbench's job as a peer sends it: in an
// item's span (traceparent) and with the callback of an accepted item (URL and token).
func BenchmarkSendItem(b *testing.B) {
	for _, bc := range []struct {
		name         string
		secret, peer bool
	}{{"plain", false, false}, {"signed", true, false}, {"peer", false, true}} {
		b.Run(bc.name, func(b *testing.B) {
			url := leanReceiver(b)
			s := New(Config{})
			defer s.Close()
			d := testDelivery(url)
			if bc.secret {
				d.Webhook.Secret = GenerateSecret()
				d.Webhook.Headers = map[string]string{"Authorization": "Bearer abc", "X-Team": "settlement"}
			}
			ctx := context.Background()
			if bc.peer {
				d.Callback = func(int, int) (string, string) {
					return "http://127.0.0.1:8080/api/v1/executions/01a23cc0-279b-7ea8-a653-c7e0ef838d09/callback",
						"v1.1796313875.0123456789abcdef0123456789abcdef"
				}
				ctx = trace.ContextWithSpanContext(ctx, trace.NewSpanContext(trace.SpanContextConfig{
					TraceID: trace.TraceID{0x4b, 0xf9, 1}, SpanID: trace.SpanID{0x00, 0xf0, 1}, TraceFlags: trace.FlagsSampled}))
			}
			if !s.Send(ctx, s.Prepare(d)).Success { // the connection, warm
				b.Fatal("the first delivery failed")
			}
			b.ReportAllocs()
			b.ResetTimer()
			for b.Loop() {
				d.Payload.ExecutionID = ejserver.NewExecutionID()
				if res := s.Send(ctx, s.Prepare(d)); !res.Success {
					b.Fatalf("delivery failed: %s", res.FailureCause)
				}
			}
		})
	}
}

// leanReceiver serves HTTP/1.1 on loopback with a hand-written loop (keep-alive, Content-Length bodies
// only, every request answered 200 with an empty body): net/http's server would add its own allocations to
// the benchmark's. It returns the URL; the listener and its connections close when the benchmark ends.
func leanReceiver(b testing.TB) string {
	b.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		b.Fatal(err)
	}
	var wg sync.WaitGroup
	var mu sync.Mutex
	var conns []net.Conn
	wg.Add(1)
	go func() {
		defer wg.Done()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c)
			mu.Unlock()
			wg.Add(1)
			go func() {
				defer wg.Done()
				serveLean(c)
			}()
		}
	}()
	b.Cleanup(func() {
		ln.Close()
		mu.Lock()
		for _, c := range conns {
			c.Close()
		}
		mu.Unlock()
		wg.Wait()
	})
	return "http://" + ln.Addr().String() + "/hook"
}

func serveLean(c net.Conn) {
	defer c.Close()
	r := bufio.NewReaderSize(c, 32<<10)
	const prefix = "content-length:"
	const answer = "HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n"
	for {
		length := 0
		for {
			line, err := r.ReadSlice('\n')
			if err != nil {
				return
			}
			if len(line) <= 2 { // the blank line ending the headers
				break
			}
			if len(line) > len(prefix) && bytes.EqualFold(line[:len(prefix)], []byte(prefix)) {
				length = 0
				for _, c := range bytes.TrimSpace(line[len(prefix):]) {
					length = 10*length + int(c-'0')
				}
			}
		}
		if _, err := r.Discard(length); err != nil {
			return
		}
		if _, err := io.WriteString(c, answer); err != nil {
			return
		}
	}
}
