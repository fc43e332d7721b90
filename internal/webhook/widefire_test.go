package webhook

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
)

// BenchmarkSendWideTask sends the requests of one peer's share of a wide fire (ejbench's fanout: 2,000
// items on three peers, so the task id lists 666 items, in the body and again in the shardingContext
// header: ~7 KB a request) from many goroutines, with net/http's default 4 KB write buffer and with the
// Sender's. It reports the process's CPU per request (this sender and the receiver) and the receiver's
// reads per request: each write the sender makes is a read (and on loopback a wake-up) at the receiver.
func BenchmarkSendWideTask(b *testing.B) {
	taskID := wideTaskID()
	for _, bc := range []struct {
		name string
		size int
	}{{"4KB", 4 << 10}, {"default", 0}} {
		b.Run(bc.name, func(b *testing.B) {
			var reads, writes atomic.Int64
			srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
				_, _ = io.Copy(io.Discard, r.Body)
				w.WriteHeader(http.StatusOK)
			}))
			ln := srv.Listener
			srv.Listener = countingListener{ln, &reads}
			srv.Start()
			defer srv.Close()
			s := New(Config{WriteBufferSize: bc.size})
			defer s.Close()
			dial := s.transport.DialContext
			s.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
				c, err := dial(ctx, network, addr)
				if err != nil {
					return nil, err
				}
				return countingConn{Conn: c, reads: new(atomic.Int64), writes: &writes}, nil
			}
			p := s.Prepare(Delivery{
				Payload: Payload{JobName: "fanout-00000", TaskID: taskID, ExecutionID: ejserver.NewExecutionID(), ShardingItem: 1500,
					ShardingParameter: "part-1500", ShardingTotalCount: 2000, Source: string(ejserver.SourceNormal),
					ScheduledAt: time.Unix(1000, 0), InstanceID: "127.0.0.3@-@4242"},
				Webhook: ejserver.Webhook{URL: srv.URL, Method: http.MethodPost},
			})
			var failed atomic.Int64
			b.SetParallelism(32)
			b.ReportAllocs()
			cpu0 := processCPU()
			b.ResetTimer()
			b.RunParallel(func(pb *testing.PB) {
				for pb.Next() {
					if !s.Send(context.Background(), p).Success {
						failed.Add(1)
					}
				}
			})
			b.StopTimer()
			if failed.Load() != 0 {
				b.Fatalf("%d requests failed", failed.Load())
			}
			// the process's CPU, less noisy than wall time on a shared machine
			b.ReportMetric(float64(processCPU()-cpu0)/float64(b.N), "cpu-ns/op")
			b.ReportMetric(float64(reads.Load())/float64(b.N), "reads/op")
			b.ReportMetric(float64(writes.Load())/float64(b.N), "writes/op")
		})
	}
}

type countingListener struct {
	net.Listener
	reads *atomic.Int64
}

func (l countingListener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	return countingConn{Conn: c, reads: l.reads, writes: new(atomic.Int64)}, nil
}

// countingConn counts the reads and writes that moved bytes.
type countingConn struct {
	net.Conn
	reads, writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	n, err := c.Conn.Write(p)
	if n > 0 {
		c.writes.Add(1)
	}
	return n, err
}

func (c countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	if n > 0 {
		c.reads.Add(1)
	}
	return n, err
}

// processCPU is the process's user and system CPU time so far.
func processCPU() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// A request of a wide fire (a ~7 KB task id in the body and the shardingContext header) leaves in one write.
func TestWideRequestLeavesInOneWrite(t *testing.T) {
	var framing atomic.Value
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		b, _ := io.ReadAll(r.Body)
		if r.ContentLength != int64(len(b)) || len(r.TransferEncoding) > 0 {
			framing.Store(fmt.Sprintf("Content-Length %d, Transfer-Encoding %v, %d bytes", r.ContentLength, r.TransferEncoding, len(b)))
		}
		w.WriteHeader(http.StatusOK)
	}))
	defer srv.Close()
	s := New(Config{})
	defer s.Close()
	var writes atomic.Int64
	dial := s.transport.DialContext
	s.transport.DialContext = func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		return countingConn{Conn: c, reads: new(atomic.Int64), writes: &writes}, nil
	}
	d := testDelivery(srv.URL)
	d.Payload.TaskID = wideTaskID()
	for range 3 {
		if res := s.Deliver(context.Background(), d); !res.Success {
			t.Fatalf("%+v", res)
		}
	}
	if f := framing.Load(); f != nil {
		t.Fatalf("the body is not sent with its length: %s", f)
	}
	if n := writes.Load(); n != 3 {
		t.Fatalf("3 requests of ~7 KB took %d writes, want one each", n)
	}
}

// wideTaskID is the task id of the last of three peers in ejbench's fanout: 666 of 2,000 items.
func wideTaskID() string {
	items := make([]string, 0, 666)
	for i := 1334; i < 2000; i++ {
		items = append(items, strconv.Itoa(i))
	}
	return "fanout-00000@-@" + strings.Join(items, ",") + "@-@READY@-@127.0.0.3@-@4242@-@0b6f0e7c-6c1f-4a57-9d55-64ff4e4f3c1d"
}

// The shardingContext header is json.Marshal's encoding made ASCII, built with one allocation for its bytes.
func FuzzShardingContextHeaderAsMarshal(f *testing.F) {
	f.Add("job", wideTaskID(), 2000, "", 1500, "part-1500")
	f.Add("j<&>", "t\u2028", 3, "p\x7f", 0, "Guangzhou 广州 \U0001F600")
	f.Fuzz(func(t *testing.T, job, task string, total int, param string, item int, itemParam string) {
		p := Payload{JobName: job, TaskID: task, ShardingTotalCount: total, JobParameter: param, ShardingItem: item, ShardingParameter: itemParam}
		got, err := shardingContextHeader(p)
		if err != nil {
			t.Fatal(err)
		}
		b, _ := json.Marshal(shardingContext{JobName: job, TaskID: task, ShardingTotalCount: total, JobParameter: param,
			ShardingItem: item, ShardingParameter: itemParam})
		if want := asciiJSON(b); got != want {
			t.Fatalf("header %q, want %q", got, want)
		}
	})
}

func TestShardingContextHeaderAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	p := Payload{JobName: "fanout-00000", TaskID: wideTaskID(), ShardingTotalCount: 2000, ShardingItem: 1500, ShardingParameter: "part-1500"}
	var h string
	bytes := testing.Benchmark(func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			h, _ = shardingContextHeader(p)
		}
	}).AllocedBytesPerOp()
	// the header itself, and the encoder's few small allocations: not a second copy of the header
	if limit := int64(len(h)) + 1024 + int64(len(h))/4; bytes > limit {
		t.Fatalf("%d bytes allocated for a %d-byte header (limit %d)", bytes, len(h), limit)
	}
}
