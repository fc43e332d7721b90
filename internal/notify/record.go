package notify

import (
	"context"
	"sync"
	"time"
)

// recordQueue bounds the records waiting for the history store; past it a record is logged as lost.
const recordQueue = 1024

// dropLogEvery is how often a channel's drops are logged (each is counted and recorded).
const dropLogEvery = time.Minute

// recorder writes delivery records to the history store on a goroutine of its own, so a drop counted in
// Deliver (the caller's path) or a slow database never waits on SQL.
type recorder struct {
	mu      sync.Mutex
	started bool
	closed  bool
	ch      chan Record
	ctx     context.Context // cancelled when Stop's drain deadline for the records passes
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

// record queues r for the history store (starting the writer on first use); after Stop it is only counted
// and logged.
func (d *Dispatcher) record(r Record) {
	d.rec.mu.Lock()
	defer d.rec.mu.Unlock()
	if d.rec.closed {
		return
	}
	if !d.rec.started {
		d.rec.started = true
		d.rec.ch = make(chan Record, recordQueue)
		d.rec.ctx, d.rec.cancel = context.WithCancel(context.Background())
		d.rec.wg.Add(1)
		go d.writeRecords(d.rec.ch, d.rec.ctx)
	}
	select {
	case d.rec.ch <- r:
	default:
		d.log.Warn("notification record not kept: the history store is behind", "channel", r.Channel,
			"notification_id", r.NotificationID, "outcome", r.Outcome)
	}
}

func (d *Dispatcher) writeRecords(ch <-chan Record, ctx context.Context) {
	defer d.rec.wg.Done()
	for r := range ch {
		wctx, cancel := context.WithTimeout(ctx, 5*time.Second)
		if err := d.cfg.Recorder.WriteNotification(wctx, r); err != nil {
			d.log.Warn("record notification", "channel", r.Channel, "notification_id", r.NotificationID, "err", err)
		}
		cancel()
	}
}

// stopRecorder lets the writer write what is queued for up to DrainTimeout, then abandons the rest.
func (d *Dispatcher) stopRecorder() {
	d.rec.mu.Lock()
	d.rec.closed = true
	started := d.rec.started
	if started {
		close(d.rec.ch)
	}
	d.rec.mu.Unlock()
	if !started {
		return
	}
	done := make(chan struct{})
	go func() { d.rec.wg.Wait(); close(done) }()
	t := d.clk.NewTimer(d.cfg.DrainTimeout)
	select {
	case <-done:
		t.Stop()
	case <-t.C():
		d.rec.cancel()
		<-done
	}
	d.rec.cancel()
}

// shouldLog reports whether to log this outcome: every one but drops and unknown channels, logged once a minute per
// channel (a full queue drops many; the metric and the history have each).
func (d *Dispatcher) shouldLog(channel, outcome string) bool {
	if outcome != OutcomeDropped && outcome != OutcomeUnknown {
		return true
	}
	now := d.clk.Now()
	d.mu.Lock()
	defer d.mu.Unlock()
	if last, ok := d.lastDropLog[channel]; ok && now.Sub(last) < dropLogEvery {
		return false
	}
	d.lastDropLog[channel] = now
	return true
}
