package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"sync"
	"sync/atomic"
	"time"
)

// Source of a delivery, as the webhook body names it.
type source uint8

const (
	srcNormal source = iota
	srcMisfire
	srcFailover
	srcManual
	srcBackfill
	srcOther
)

func parseSource(s string) source {
	switch s {
	case "NORMAL_TRIGGER":
		return srcNormal
	case "MISFIRE":
		return srcMisfire
	case "FAILOVER":
		return srcFailover
	case "MANUAL":
		return srcManual
	case "BACKFILL":
		return srcBackfill
	}
	return srcOther
}

// record is one request the receiver got: when it arrived and what the body said. It holds no pointer (job
// names and instance ids are interned, the execution id is inline), so the receiver's collections do not mark
// the millions a long window keeps: with three strings each, late in a 100,000-job window a collection of the
// receiver marked 140-240 MB for 0.1-0.4 s, and the requests it answered meanwhile looked late.
type record struct {
	arrived   int64  // Unix ns
	scheduled int64  // Unix ns of scheduledAt
	jobID     uint32 // interned
	instID    uint32 // interned
	item      int32
	attempt   int16
	src       source
	execLen   uint8
	exec      [maxExecID]byte
}

// maxExecID is the longest execution id a record keeps whole (ejserver's are UUIDs, 36 bytes; the loop's 32).
const maxExecID = 48

func (r *record) job() string      { return interned.name(r.jobID) }
func (r *record) instance() string { return interned.name(r.instID) }
func (r *record) execID() string   { return string(r.exec[:r.execLen]) }

func (r *record) setJob(s string)      { r.jobID = interned.id(s) }
func (r *record) setInstance(s string) { r.instID = interned.id(s) }
func (r *record) setExecID(s string)   { r.execLen = uint8(copy(r.exec[:], s)) }

// internTable gives each distinct string (job names, instance ids) a number, for good: a run has at most as many
// as jobs and peers.
type internTable struct {
	mu    sync.RWMutex
	ids   map[string]uint32
	names []string
}

var interned = internTable{ids: map[string]uint32{"": 0}, names: []string{""}}

func (t *internTable) id(s string) uint32 {
	t.mu.RLock()
	i, ok := t.ids[s]
	t.mu.RUnlock()
	if ok {
		return i
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if i, ok := t.ids[s]; ok {
		return i
	}
	i = uint32(len(t.names))
	t.names = append(t.names, s)
	t.ids[s] = i
	return i
}

func (t *internTable) name(i uint32) string {
	t.mu.RLock()
	defer t.mu.RUnlock()
	return t.names[i]
}

// fireKey names one item of one fire.
type fireKey struct {
	job       string
	item      int32
	scheduled int64
}

func (r *record) key() fireKey { return fireKey{r.job(), r.item, r.scheduled} }

// recorder is the benchmark's webhook receiver: it answers 200 at once (or, for NORMAL_TRIGGER requests, after
// a set delay, or, with a completer, 202 Accepted and a completion callback later) and records each request
// into storage allocated up front, so it is never the bottleneck.
type recorder struct {
	URL string
	ln  net.Listener
	srv *http.Server

	mu   sync.Mutex
	recs []record

	delayNormal atomic.Int64              // ns: answer NORMAL_TRIGGER requests this late (the failover workload's slow receiver)
	async       atomic.Pointer[completer] // the async workload: it decides each request's answer
	bufs        sync.Pool
}

// newRecorder listens on a free loopback port with room for capacity records before it grows.
func newRecorder(capacity int) (*recorder, error) {
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	r := &recorder{URL: "http://" + ln.Addr().String() + "/hook", ln: ln, recs: make([]record, 0, capacity)}
	r.bufs.New = func() any { return new(bytes.Buffer) }
	r.srv = &http.Server{Handler: r, ReadHeaderTimeout: 10 * time.Second, IdleTimeout: 5 * time.Minute}
	go func() { _ = r.srv.Serve(ln) }()
	return r, nil
}

func (r *recorder) Close() { _ = r.srv.Close() }

// body is the part of the webhook payload the benchmark reads.
type body struct {
	JobName      string `json:"jobName"`
	ExecutionID  string `json:"executionId"`
	ShardingItem int32  `json:"shardingItem"`
	Source       string `json:"source"`
	ScheduledAt  string `json:"scheduledAt"`
	InstanceID   string `json:"instanceId"`
	Attempt      int    `json:"attempt"`
	// the async workload's
	CallbackURL   string `json:"callbackUrl"`
	CallbackToken string `json:"callbackToken"`
}

func (r *recorder) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	arrived := time.Now()
	buf := r.bufs.Get().(*bytes.Buffer)
	buf.Reset()
	_, _ = io.Copy(buf, io.LimitReader(req.Body, 1<<20))
	var b body
	rec := record{arrived: arrived.UnixNano(), src: srcOther}
	if json.Unmarshal(buf.Bytes(), &b) == nil {
		rec.item = b.ShardingItem
		rec.setJob(b.JobName)
		rec.setInstance(b.InstanceID)
		rec.setExecID(b.ExecutionID)
		rec.attempt = int16(min(b.Attempt, 1<<15-1))
		rec.src = parseSource(b.Source)
		if t, err := time.Parse(time.RFC3339Nano, b.ScheduledAt); err == nil {
			rec.scheduled = t.UnixNano()
		}
	}
	r.bufs.Put(buf)
	r.mu.Lock()
	r.recs = append(r.recs, rec)
	r.mu.Unlock()
	if c := r.async.Load(); c != nil {
		w.WriteHeader(c.take(&rec, req.Header.Get("webhook-id"), b.CallbackURL, b.CallbackToken))
		return
	}
	if d := time.Duration(r.delayNormal.Load()); d > 0 && rec.src == srcNormal {
		t := time.NewTimer(d)
		select {
		case <-t.C:
		case <-req.Context().Done():
			t.Stop()
			return
		}
	}
	w.WriteHeader(http.StatusOK)
}

// records returns the records so far (the slice is shared: read it only).
func (r *recorder) records() []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs[:len(r.recs):len(r.recs)]
}

// count is the number of records so far.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.recs)
}

// reset forgets the records, keeping the storage.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs = make([]record, 0, cap(r.recs))
}

// writeCSV writes the records, one delivery a line, with a header: scheduled and arrival times (Unix ns),
// lateness (ms), job, item, source, the delivering instance, the execution id and the attempt.
func writeCSV(path string, recs []record) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	w := bufio.NewWriter(f)
	fmt.Fprintln(w, "scheduled_ns,arrived_ns,late_ms,job,item,source,instance,execution_id,attempt")
	for i := range recs {
		r := &recs[i]
		fmt.Fprintf(w, "%d,%d,%.3f,%s,%d,%s,%s,%s,%d\n", r.scheduled, r.arrived, float64(r.arrived-r.scheduled)/1e6,
			r.job(), r.item, sourceNames[r.src], r.instance(), r.execID(), r.attempt)
	}
	if err := w.Flush(); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
