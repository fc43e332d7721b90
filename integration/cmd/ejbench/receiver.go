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
	recs recordLog

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
	r := &recorder{URL: "http://" + ln.Addr().String() + "/hook", ln: ln, recs: newRecordLog(capacity)}
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
	r.recs.add(rec)
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

// records returns a copy of the records so far.
func (r *recorder) records() []record { return r.since(0) }

// since returns a copy of the records from the n-th on.
func (r *recorder) since(n int) []record {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs.since(n)
}

// count is the number of records so far.
func (r *recorder) count() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.recs.n
}

// reset forgets the records, keeping the storage.
func (r *recorder) reset() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.recs.reset()
}

// recordChunk is how many records one block of a recordLog holds (4.5 MB).
const recordChunk = 1 << 16

// recordLog keeps records in blocks that are never moved: growing past its capacity adds a block rather than
// copying every record into a larger array under the receiver's lock (at ~1 million records, 70 MB copied and
// a larger array zeroed while every request waited: the receiver's live heap went from 90 to 180 MB in one
// step, and the requests of that second looked 0.15-0.45 s late).
type recordLog struct {
	blocks [][]record // blocks[:cur] are full, blocks[cur] fills; those after it are empty, kept from a reset
	cur    int
	n      int
}

func newRecordLog(capacity int) recordLog {
	l := recordLog{blocks: make([][]record, max(1, (capacity+recordChunk-1)/recordChunk))}
	for i := range l.blocks {
		l.blocks[i] = make([]record, 0, recordChunk)
	}
	return l
}

func (l *recordLog) add(r record) {
	if len(l.blocks[l.cur]) == recordChunk {
		l.cur++
		if l.cur == len(l.blocks) {
			l.blocks = append(l.blocks, make([]record, 0, recordChunk))
		}
	}
	l.blocks[l.cur] = append(l.blocks[l.cur], r)
	l.n++
}

// since copies the records from the n-th on.
func (l *recordLog) since(n int) []record {
	out := make([]record, 0, max(0, l.n-n))
	for i := n / recordChunk; i <= l.cur && n < l.n; i++ {
		out = append(out, l.blocks[i][max(0, n-i*recordChunk):]...)
	}
	return out
}

func (l *recordLog) reset() {
	for i := range l.cur + 1 {
		l.blocks[i] = l.blocks[i][:0]
	}
	l.cur, l.n = 0, 0
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
