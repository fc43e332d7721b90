package cluster

import (
	"cmp"
	"fmt"
	"log/slog"
	"maps"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// refreshKind names what a refresh reads (and re-watches).
type refreshKind uint8

const (
	kindJobs          refreshKind = iota + 1 // the namespace's children
	kindPeer                                 // this peer's meta node
	kindLoad                                 // everything of one job
	kindConfig                               // config
	kindInstances                            // instances children
	kindServers                              // servers children
	kindServer                               // servers/{ip}
	kindLeader                               // leader/election/instance
	kindNecessary                            // leader/sharding/necessary
	kindFailoverItems                        // leader/failover/items children
	kindTrigger                              // trigger/{me}
	kindSharding                             // sharding children
	kindItemInstance                         // sharding/{i}/instance
	kindItemDisabled                         // sharding/{i}/disabled
	kindItemFailover                         // sharding/{i}/failover
	kindRegister                             // create servers/{ip} and instances/{me}
	kindCampaign                             // try to become the job's leader
	kindPeers                                // the namespace's live peers (livepeers.go)
	kindPresence                             // whether a job's root exists (jobwatch.go)
	kindReport                               // tell the listeners of deletions applied from events (deletions.go)
	kindCampaignLate                         // campaign, put off for the job's preferred candidate (election.go)

	lastKind = kindCampaignLate // the tests classify every kind up to here
)

// kindNames are the kinds' names in logs (index: the kind).
var kindNames = [lastKind + 1]string{"", "jobs", "peer", "load", "config", "instances", "servers", "server", "leader",
	"necessary", "failover_items", "trigger", "sharding", "item_instance", "item_disabled", "item_failover", "register",
	"campaign", "peers", "presence", "report", "campaign_late"}

func (k refreshKind) String() string {
	if k > lastKind {
		return "unknown"
	}
	return kindNames[k]
}

// stateKeep is the size of the refresher's index under which it is kept as it is (see peak).
const stateKeep = 1024

// stateShrink is how far below its peak the index falls before it is made anew: a Go map keeps the groups of
// its largest size, so after a registration of 100,000 jobs (~600,000 keys: loads, registrations,
// campaigns and items' reads) the index held ~50 MB while a few keys came and went, and it never empties
// while refreshes keep coming. Copying the live keys when a quarter of the peak is left costs O(keys) once
// per peak: amortised, O(1) a key.
const stateShrink = 4

// lane is where a waiting key queues: workers take keys from the first non-empty lane, in this order.
type lane uint8

const (
	laneFront  lane = iota // the few keys every other wait on (front in settled.go)
	laneWanted             // loads a waiting fire needs, read together ahead of the other lanes (expedite)
	laneItems              // urgent reads of items' nodes (and necessary), read together (readbatch.go)
	laneUrgent             // the other urgent keys (urgent in settled.go, kickUrgent)
	laneLoads              // jobs' loads, read together (loadbatch.go)
	laneReads              // reads of loaded jobs' leader nodes and instances, read together (readbatch.go)
	laneOther
	lanes
)

// urgent reports whether l holds urgent keys (the lanes before the loads').
func (l lane) urgent() bool { return l <= laneUrgent }

// batchLane selects the keys of a lane that workers take together and runs them.
type batchLane struct {
	of  func(k refreshKey) bool
	run func(keys []refreshKey) (errs []error)
	max int
}

// refreshKey identifies one refresh; equal keys coalesce.
type refreshKey struct {
	kind refreshKind
	job  string
	ip   string
	item int
}

// keyState is what the refresher knows of a key it holds (queued or running).
type keyState uint8

const (
	keyDirty     keyState = 1 << iota // kicked while it ran: run again when done
	keyRunning                        // taken by a worker: a copy of it still in a lane is passed over
	keyExpedited                      // a copy waits in laneWanted (expedite)
)

// refresher runs refreshes on a fixed pool of workers. A key kicked while it is queued is not queued twice;
// a key kicked while it runs runs once more afterwards, so the last read always follows the last event.
// A refresh that fails because the connection is down is retried after a pause. A queued key can also be
// expedited: a copy goes to laneWanted, and whichever copy a worker takes first runs (the other is passed over).
type refresher struct {
	run     func(refreshKey) error
	log     *slog.Logger
	clk     clock.Clock
	stop    <-chan struct{}
	workers int
	// pending is told when a key of a job is queued (+1) and when it is done (-1).
	pending func(k refreshKey, delta int)
	// urgent keys are run before the others (see urgent in settled.go), front keys before all
	urgent, front func(k refreshKey) bool
	// batches are the lanes whose keys a worker takes together (laneWanted, laneItems, laneLoads, laneReads): of
	// selects a lane's keys, run runs up to max of them at once (errs[i] is keys[i]'s outcome); a lane without
	// run is not used
	batches [lanes]batchLane
	// loadingOf selects the keys a starting registry waits for (the listings and the loads): loading counts
	// those queued or running, and loadedC is closed each time it drops to zero
	loadingOf func(k refreshKey) bool

	mu    sync.Mutex
	state map[refreshKey]keyState // present: queued or running
	// peak is state's largest size since it was last made: a Go map keeps the buckets of its peak, and a
	// registration of 100,000 jobs queues hundreds of thousands of keys that stay idle afterwards (shrinkLocked).
	peak   int
	lanes  [lanes][]refreshKey // the waiting keys, taken from the first non-empty lane
	signal chan struct{}
	idleC  chan struct{}
	// loading and loadedC: see loadingOf
	loading int
	loadedC chan struct{}
	wg      sync.WaitGroup
}

func newRefresher(workers int, run func(refreshKey) error, log *slog.Logger, clk clock.Clock, stop <-chan struct{}) *refresher {
	return &refresher{
		run: run, log: log, clk: clk, stop: stop, workers: workers,
		state: make(map[refreshKey]keyState), signal: make(chan struct{}, 1), idleC: make(chan struct{}),
		loadedC: make(chan struct{}),
		pending: func(refreshKey, int) {}, urgent: func(refreshKey) bool { return false },
		front:     func(refreshKey) bool { return false },
		loadingOf: func(refreshKey) bool { return false },
	}
}

func (w *refresher) start() {
	for range w.workers {
		w.wg.Add(1)
		go w.worker()
	}
	w.wg.Add(1)
	go w.logBacklog()
}

// backlogLogAt is the waiting refreshes from which the refresher logs them by kind, every backlogLogEvery: a
// peer that far behind (a restart or a burst of registrations at 100,000 jobs) tells which reads hold it.
const (
	backlogLogAt    = 10_000
	backlogLogEvery = 10 * time.Second
)

func (w *refresher) logBacklog() {
	defer w.wg.Done()
	for clock.Sleep(w.clk, backlogLogEvery, w.stop) {
		if b := w.backlog(); b.Total() >= backlogLogAt {
			urgent, other := w.queuedByKind()
			w.log.Info("registry reads behind", "waiting", b.Total(), "urgent", countsByKind(urgent),
				"others", countsByKind(other))
		}
	}
}

// countsByKind writes counts as "kind=n ...", the largest first.
func countsByKind(counts map[refreshKind]int) string {
	kinds := slices.Collect(maps.Keys(counts))
	slices.SortFunc(kinds, func(a, b refreshKind) int { return cmp.Or(counts[b]-counts[a], int(a)-int(b)) })
	var sb strings.Builder
	for i, k := range kinds {
		if i > 0 {
			sb.WriteByte(' ')
		}
		fmt.Fprintf(&sb, "%s=%d", k, counts[k])
	}
	return sb.String()
}

// wait returns once the workers have exited (after stop closes).
func (w *refresher) wait() {
	w.wg.Wait()
}

func (w *refresher) kick(k refreshKey) { w.kickFirst(k, false) }

// kickUrgent is kick for a key that runs before the queued others, whatever its kind (a lost leader's
// campaign: deletions.go). A key already queued keeps its place.
func (w *refresher) kickUrgent(k refreshKey) { w.kickFirst(k, true) }

func (w *refresher) kickFirst(k refreshKey, first bool) {
	w.mu.Lock()
	if st, ok := w.state[k]; ok {
		// queued and not taken yet, its run reads after this kick: nothing more to do. Marked dirty as well,
		// every key kicked again while it waited ran twice: a registration of 100,000 jobs kicks each job's
		// instances' listing three times (one per peer's registration) while it waits behind the loads
		if st&keyRunning != 0 {
			w.state[k] = st | keyDirty
		}
		w.mu.Unlock()
		return
	}
	w.state[k] = 0
	w.peak = max(w.peak, len(w.state))
	if w.loadingOf(k) {
		w.loading++
	}
	w.mu.Unlock()
	w.pending(k, +1) // before the key is visible to workers, so the count never goes below zero
	w.pushFirst(k, first)
}

func (w *refresher) push(k refreshKey) {
	w.pushFirst(k, false)
}

// pushFirst queues k in its lane: the front lane when front(k), a batched lane that selects it, else the
// urgent keys' when first or urgent(k), else the others'.
func (w *refresher) pushFirst(k refreshKey, first bool) {
	w.mu.Lock()
	l := w.laneOf(k, first)
	w.lanes[l] = append(w.lanes[l], k)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

func (w *refresher) laneOf(k refreshKey, first bool) lane {
	switch b := &w.batches; {
	case w.front(k):
		return laneFront
	case b[laneItems].run != nil && b[laneItems].of(k):
		return laneItems
	case first || w.urgent(k):
		return laneUrgent
	case b[laneLoads].run != nil && b[laneLoads].of(k):
		return laneLoads
	case b[laneReads].run != nil && b[laneReads].of(k):
		return laneReads
	}
	return laneOther
}

// waitingLocked is the number of keys waiting in all lanes.
func (w *refresher) waitingLocked() int {
	n := 0
	for _, q := range w.lanes {
		n += len(q)
	}
	return n
}

// Backlog is how many refreshes wait in the refresher's lanes (not those running): Urgent, the urgent keys
// (the front lane's and items' reads included), Batched, the loads, Other, the rest (the batched leader and
// instances' reads included).
type Backlog struct {
	Urgent, Batched, Other int
}

// Total is the refreshes waiting in all lanes.
func (b Backlog) Total() int { return b.Urgent + b.Batched + b.Other }

func (w *refresher) backlog() Backlog {
	w.mu.Lock()
	defer w.mu.Unlock()
	b := Backlog{Batched: len(w.lanes[laneLoads]), Other: len(w.lanes[laneReads]) + len(w.lanes[laneOther])}
	for l, q := range w.lanes {
		if lane(l).urgent() {
			b.Urgent += len(q)
		}
	}
	return b
}

// queuedByKind counts the waiting refreshes of each kind, urgent and not (O(waiting), under the lock).
func (w *refresher) queuedByKind() (urgent, other map[refreshKind]int) {
	urgent, other = map[refreshKind]int{}, map[refreshKind]int{}
	w.mu.Lock()
	defer w.mu.Unlock()
	for l, q := range w.lanes {
		counts := other
		if lane(l).urgent() {
			counts = urgent
		}
		for _, k := range q {
			if st, ok := w.state[k]; ok && st&keyRunning == 0 && (st&keyExpedited == 0 || lane(l) == laneWanted) {
				counts[k.kind]++ // an expedited key counts once, in laneWanted
			}
		}
	}
	return urgent, other
}

func (w *refresher) idle() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return len(w.state) == 0
}

// loaded reports whether no key loadingOf selects is queued or running.
func (w *refresher) loaded() bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.loading == 0
}

// loadedCh returns a channel closed the next time no key loadingOf selects is queued or running.
func (w *refresher) loadedCh() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.loadedC
}

// idleCh returns a channel closed the next time the refresher has nothing queued or running.
func (w *refresher) idleCh() <-chan struct{} {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.idleC
}

// takeLocked marks the keys a worker took from a lane as running and returns them, leaving out the copies
// whose key runs or ran already (expedite queues a key twice).
func (w *refresher) takeLocked(q []refreshKey) []refreshKey {
	keys := make([]refreshKey, 0, len(q))
	for _, k := range q {
		st, ok := w.state[k]
		if !ok || st&keyRunning != 0 {
			continue
		}
		w.state[k] = (st | keyRunning) &^ keyExpedited
		keys = append(keys, k)
	}
	return keys
}

// expedite moves k, when it is queued and not running, to laneWanted, ahead of every lane but the front one,
// and reports whether it did. A fire that waits for a job's reads (JobSnapshot.ItemsSettled) asks for its
// load: behind a restarted peer's loads of 100,000 jobs (~65,000 queued at its first fires), a loaded job whose
// load was queued again waited there, and its fire was skipped after 30 s (docs/benchmarks.md, run 38). A key
// is moved once while it waits; its copy in its own lane is passed over when taken (takeLocked).
func (w *refresher) expedite(k refreshKey) bool {
	w.mu.Lock()
	st, ok := w.state[k]
	if !ok || st&(keyRunning|keyExpedited) != 0 {
		w.mu.Unlock()
		return false
	}
	w.state[k] = st | keyExpedited
	w.lanes[laneWanted] = append(w.lanes[laneWanted], k)
	w.mu.Unlock()
	select {
	case w.signal <- struct{}{}:
	default:
	}
	return true
}

// stateOf is what the refresher holds of k: ok is false when k is neither queued nor running.
func (w *refresher) stateOf(k refreshKey) (keyState, bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	st, ok := w.state[k]
	return st, ok
}

func (w *refresher) worker() {
	defer w.wg.Done()
	for {
		w.mu.Lock()
		if w.waitingLocked() == 0 {
			w.mu.Unlock()
			select {
			case <-w.stop:
				return
			case <-w.signal:
				continue
			}
		}
		l := lane(0)
		for len(w.lanes[l]) == 0 {
			l++
		}
		q := w.lanes[l]
		n := 1
		if w.batches[l].run != nil {
			n = min(len(q), max(w.batches[l].max, 1))
		}
		keys := w.takeLocked(q[:n])
		// an emptied lane lets its array go: popping from the front keeps a registration's backlog (~600,000
		// keys at 100,000 jobs, 48 bytes each) until appends have walked past its end
		if w.lanes[l] = q[n:]; len(w.lanes[l]) == 0 {
			w.lanes[l] = nil
		}
		if len(keys) == 0 { // copies of keys expedited or run already
			w.mu.Unlock()
			continue
		}
		if w.waitingLocked() > 0 {
			select {
			case w.signal <- struct{}{}: // wake another worker for the rest
			default:
			}
		}
		w.mu.Unlock()

		var errs []error
		if w.batches[l].run == nil {
			errs = []error{w.run(keys[0])}
		} else {
			errs = w.batches[l].run(keys)
		}
		var failed []refreshKey
		for i, k := range keys {
			if err := errs[i]; err != nil {
				if isTransient(err) {
					w.log.Debug("registry read failed; retrying", "kind", k.kind, "job", k.job, "err", err)
				} else {
					w.log.Warn("registry read failed; retrying", "kind", k.kind, "job", k.job, "err", err)
				}
				failed = append(failed, k)
				continue
			}
			w.done(k)
		}
		if len(failed) > 0 {
			if !clock.Sleep(w.clk, 500*time.Millisecond, w.stop) {
				return
			}
			for _, k := range failed {
				w.mu.Lock()
				w.state[k] &^= keyRunning
				w.mu.Unlock()
				w.push(k)
			}
		}
	}
}

// done ends a key's run: it runs again if it was kicked meanwhile, and otherwise leaves the index.
func (w *refresher) done(k refreshKey) {
	w.mu.Lock()
	if w.state[k]&keyDirty != 0 {
		w.state[k] = 0
		w.mu.Unlock()
		w.push(k)
		return
	}
	delete(w.state, k)
	if w.loadingOf(k) {
		if w.loading--; w.loading == 0 {
			close(w.loadedC)
			w.loadedC = make(chan struct{})
		}
	}
	w.shrinkLocked()
	if len(w.state) == 0 {
		close(w.idleC)
		w.idleC = make(chan struct{})
	}
	w.mu.Unlock()
	w.pending(k, -1)
}

// shrinkLocked makes the index anew, with only its live keys, once it has fallen to a stateShrink-th of its
// peak (an empty index after a peak above stateKeep included), letting the peak's groups go.
func (w *refresher) shrinkLocked() {
	if w.peak <= stateKeep || len(w.state) > w.peak/stateShrink {
		return
	}
	// not maps.Clone: a clone keeps the original's capacity
	state := make(map[refreshKey]keyState, len(w.state))
	maps.Copy(state, w.state)
	w.state, w.peak = state, len(state)
}
