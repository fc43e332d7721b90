package cluster

import (
	"bytes"
	"sync"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// configBodies shares one parsed config between the jobs whose config nodes differ only in their name (issue
// 21, part mm): every peer holds every job's config, a JobConfig is 656 bytes before its strings, and a
// namespace's jobs mostly repeat a few shapes (the same webhook, strategy and timeouts, a few crons). A body
// is a config with no JobName, shared and never written; a job's entry materialises its own named copy
// while the job is read (jobEntry.configLocked) and lets it go when it turns cold (Registry.sweepCold).
// Equal bodies are found by the node's bytes without its top-level jobName line, so a job's load parses
// YAML only for a shape not seen before.
type configBodies struct {
	mu    sync.Mutex
	byKey map[string]*ejserver.JobConfig
	max   int
}

// configBodiesMax bounds the table: past it the table starts over (the bodies handed out stay valid), so a
// namespace whose jobs are all different costs a bounded table beside the bodies it would hold anyway.
const configBodiesMax = 4096

// parse returns the body of a config node: shared with the jobs whose nodes differ only in their jobName
// line, or parsed now. A node that does not parse is never shared: it gets what parsed, and the error.
func (t *configBodies) parse(data []byte) (*ejserver.JobConfig, error) {
	key, keyed := bodyKey(data)
	if keyed {
		t.mu.Lock()
		body := t.byKey[string(key)]
		t.mu.Unlock()
		if body != nil {
			return body, nil
		}
	}
	cfg, err := ejserver.ParseElasticJobYAML(data)
	internConfig(&cfg)
	if err != nil {
		return &cfg, err // as parsed, its name included (such a job never fires)
	}
	cfg.JobName = ""
	body := &cfg
	if !keyed {
		return body, nil
	}
	t.mu.Lock()
	defer t.mu.Unlock()
	if got := t.byKey[string(key)]; got != nil {
		return got, nil // another load parsed the same shape meanwhile
	}
	limit := t.max
	if limit <= 0 {
		limit = configBodiesMax
	}
	if t.byKey == nil || len(t.byKey) >= limit {
		t.byKey = make(map[string]*ejserver.JobConfig)
	}
	t.byKey[string(key)] = body
	return body, nil
}

// bodyKey is a config node without its top-level jobName line (the one line of a block mapping at column 0
// that starts "jobName:"), and whether it had exactly one such line. Two nodes with equal keys hold the same
// mapping apart from jobName, so they parse to the same config apart from its name (which the registry takes
// from the node's path anyway). A node in another form (flow style, no or several such lines) is not keyed.
func bodyKey(data []byte) ([]byte, bool) {
	from, to := -1, -1
	for i := 0; i < len(data); {
		end := len(data)
		if n := bytes.IndexByte(data[i:], '\n'); n >= 0 {
			end = i + n + 1
		}
		if bytes.HasPrefix(data[i:end], []byte("jobName:")) {
			if from >= 0 || end == len(data) && data[end-1] != '\n' {
				return nil, false // a second one, or a last line without its newline
			}
			from, to = i, end
		}
		i = end
	}
	if from < 0 {
		return nil, false
	}
	key := make([]byte, 0, len(data)-(to-from))
	return append(append(key, data[:from]...), data[to:]...), true
}

// configLocked is the job's config (nil before its first load): its body with the job's name, made on the
// first read since the job last turned cold and shared by its snapshots and events until then.
func (e *jobEntry) configLocked() *ejserver.JobConfig {
	e.touchLocked()
	if e.st.cfg == nil && e.st.body != nil {
		c := *e.st.body
		if e.st.cfgErr == nil {
			c.JobName = e.name
		}
		e.st.cfg = &c
	}
	return e.st.cfg
}

// setConfigLocked replaces the job's config with body, parsed from its node's version st.
func (e *jobEntry) setConfigLocked(body *ejserver.JobConfig, err error, st *zk.Stat) {
	e.st.body, e.st.cfg, e.st.cfgErr = body, nil, err
	e.st.cfgVersion, e.st.cfgCzxid, e.st.cfgMtime = st.Version, st.Czxid, st.Mtime
}

// coldAfter is how often cached snapshots and named configs are swept: a job not read between two sweeps
// (5-10 s after its last read) lets them go and makes them again at its next read, so a job that fires once
// a minute holds them for seconds around its fire, not ~1 KB on every peer all the time; a job read more
// often keeps them.
const coldAfter = 5 * time.Second

// warmEntries lists the entries that hold a snapshot or a named config (jobEntry.warm), for the sweep to
// visit instead of every job: at 100,000 jobs firing once a minute a sweep finds ~2 % of them warm, and
// walking all of them under the registry's lock, an entry's lock each, was ~1.5 % of a peer's CPU (issue 21).
// Lock order: an entry's mu, then this mu.
type warmEntries struct {
	mu   sync.Mutex
	list []*jobEntry
}

// touchLocked records a read of the entry's snapshot or config since the last sweep, and lists the entry
// among the warm ones if it is not (e.mu held; before the read makes what the sweep drops).
func (e *jobEntry) touchLocked() {
	e.touched = true
	if e.warm || e.sh == nil {
		return
	}
	e.warm = true
	e.sh.warm.add(e)
}

// add lists e (e.mu held).
func (w *warmEntries) add(e *jobEntry) {
	w.mu.Lock()
	w.list = append(w.list, e)
	w.mu.Unlock()
}

// take empties the list and returns what it held.
func (w *warmEntries) take() []*jobEntry {
	w.mu.Lock()
	defer w.mu.Unlock()
	out := w.list
	w.list = make([]*jobEntry, 0, len(out))
	return out
}

// sweepCold drops the cached snapshot and named config of every job not read since the previous sweep; the
// jobs read since stay listed. A job deleted meanwhile is dropped like a cold one.
func (r *Registry) sweepCold() {
	w := &r.entries.warm
	for _, e := range w.take() {
		e.mu.Lock()
		if e.touched {
			e.touched = false
			w.add(e)
		} else {
			e.snap = nil
			if e.st.body != nil {
				e.st.cfg = nil
			}
			e.warm = false
		}
		e.mu.Unlock()
	}
}

// sweepLoop runs sweepCold every coldAfter until the registry stops.
func (r *Registry) sweepLoop() {
	defer r.wg.Done()
	for clock.Sleep(r.clk, coldAfter, r.stop) {
		r.sweepCold()
	}
}
