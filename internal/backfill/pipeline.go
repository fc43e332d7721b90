package backfill

import (
	"context"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
)

// paceClock is one run's pacing state between requests: when its latest fire started and how long the
// current fire has yielded to the busy peer.
type paceClock struct {
	lastFire  time.Time
	held      time.Duration
	fireStart bool
}

// startFire marks the next request as the first of a new fire.
func (pc *paceClock) startFire() {
	pc.fireStart, pc.held = true, 0
}

// pace waits until the next request may leave (Pacing.Decide); false if ctx ended first.
func (r *Runner) pace(ctx context.Context, pc *paceClock) bool {
	for {
		var busy time.Duration
		if r.cfg.Busy != nil {
			busy = r.cfg.Busy(r.cfg.Pacing.Guard)
		}
		now := r.clk.Now()
		verdict, wait := r.cfg.Pacing.Decide(now, PaceState{FireStart: pc.fireStart, LastFire: pc.lastFire, Held: pc.held, Busy: busy})
		if verdict == Go {
			if pc.fireStart {
				pc.lastFire, pc.fireStart = now, false
			}
			return true
		}
		slept := clock.Sleep(r.clk, wait, ctx.Done())
		if verdict == Yield {
			pc.held += r.clk.Since(now)
		}
		if !slept {
			return false
		}
	}
}

// settler records a run's sent fires done in their order, each once its items' history records have
// committed, while the run sends the next ones: at most Pacing.MaxPending fires are sent (or being sent)
// and not yet recorded done (the history writer yields to the peer's own sends, and a run that waited for
// each fire's commits before the next one left would go no faster than the history catches up). Its
// writes and the run's go through owned's lock.
type settler struct {
	r       *Runner
	o       *owned
	slots   chan struct{}  // one per fire sent and not yet recorded done (capacity MaxPending)
	queue   chan *sentFire // the fires sent, in order
	done    chan struct{}  // closed when the settler has ended
	stopped chan struct{}  // closed when a write failed: the backfill is no longer this peer's
	cancel  context.CancelFunc
}

// startSettler starts the run's settler; cancel stops the run's sends when a write fails.
func (r *Runner) startSettler(o *owned, cancel context.CancelFunc) *settler {
	n := r.cfg.Pacing.MaxPending
	s := &settler{r: r, o: o, slots: make(chan struct{}, n), queue: make(chan *sentFire, n), done: make(chan struct{}),
		stopped: make(chan struct{}), cancel: cancel}
	go s.loop()
	return s
}

// acquire waits until one more fire may be sent; false if the settler stopped or ctx ended first.
func (s *settler) acquire(ctx context.Context) bool {
	select {
	case s.slots <- struct{}{}:
		return true
	case <-s.stopped:
	case <-ctx.Done():
	}
	return false
}

// add queues a sent fire (its slot acquired): the settler records it done after the fires before it.
func (s *settler) add(sf *sentFire) {
	s.queue <- sf // never blocks: at most MaxPending fires hold a slot
}

// release gives back the slot of a fire that was not sent in full (not queued).
func (s *settler) release() { <-s.slots }

// close waits until every queued fire is recorded done (or the settler stopped) and returns whether the
// backfill is still this peer's.
func (s *settler) close() bool {
	close(s.queue)
	<-s.done
	select {
	case <-s.stopped:
		return false
	default:
		return true
	}
}

func (s *settler) loop() {
	defer close(s.done)
	failed := false
	for sf := range s.queue {
		sf.commits.Wait()
		if !failed && !s.o.advance(s.r, sf.out) {
			failed = true
			close(s.stopped)
			s.cancel()
		}
		<-s.slots
	}
}
