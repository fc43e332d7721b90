package async

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/lease"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A lease that a peer ended by expiry in ZooKeeper, the peer then lost before its history record was written,
// is recorded by the watcher duty's next holder (it finds the end in the ended folder), and the ended record
// stays in ZooKeeper until that record has committed: the end is never silently missing from the history.
func TestWatcherRecordsAnExpiryWhosePeerWasLost(t *testing.T) {
	clk := clock.NewFake(time.Now())
	ns := zktest.Namespace("lostexpiry")
	lost := newFixture(t, ns, clk, "http://127.0.0.1:9/hook")
	const id = "01a20d23-0495-75d9-a8b1-28fcace5ffa1"
	l := lost.accept(t, id)
	_, version, err := lost.reg.ReadLease(id)
	if err != nil {
		t.Fatal(err)
	}
	// the lost peer's expiry, as it landed: the lease ended in ZooKeeper, nothing else done
	d := lease.Apply(l, lease.Event{Kind: lease.Tick, At: l.DueAt().Add(time.Millisecond)}, lease.Policy{MaxAttempts: 1})
	if !d.Ended || d.Lease.State != lease.Expired {
		t.Fatalf("the tick did not expire the lease: %+v", d)
	}
	if _, err := lost.reg.WriteLease(d.Lease, version, nil); err != nil {
		t.Fatal(err)
	}
	lost.mgr.Stop()

	next := newFixture(t, ns, clk, "http://127.0.0.1:9/hook")
	next.rec.failing.Store(true) // the history store is down when the record's retention is over
	if err := next.mgr.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "the next holder to record the expiry", func() bool {
		got := next.rec.ended(id)
		return len(got) > 0 && got[0].State == string(lease.Expired) && !got[0].Success
	})
	// past the retention, with the store failing: the ended record is kept
	waitFor(t, "two tries to commit the end before deleting its record", func() bool {
		clk.Advance(30 * time.Second)
		return next.rec.commits.Load() >= 2
	})
	if _, _, err := next.reg.ReadLease(id); err != nil {
		t.Fatalf("the ended record went before its end was committed: %v", err)
	}
	next.rec.failing.Store(false)
	waitFor(t, "the ended record to go once its end committed", func() bool {
		clk.Advance(10 * time.Second)
		_, _, err := next.reg.ReadLease(id)
		return errors.Is(err, cluster.ErrNoLease)
	})
}
