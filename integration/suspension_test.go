package integration

import (
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/tcpproxy"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A ZooKeeper reconnect of some tens of milliseconds at a fire's lead time (when a peer prepares it) or at its
// scheduled time costs the fire lateness, never the fire. Issue 20's soak lost such a fire on every peer at
// once: its proxies' heal closed every peer's connection, each session was suspended for ~40 ms, and the
// fire whose lead time fell in them was skipped everywhere ("session in doubt").
//
// The peers reach the shared ZooKeeper through two proxies (two addresses, so that go-zookeeper reconnects
// to the other one at once rather than after its one-second pause at the end of its server list); each drop
// closes every connection of both and holds new ones for 50 ms, as a heal's reconnect does. The drops land
// just before the hand-off of a 1-second job's fire (100 ms ahead of it: a tenth of the period) and just
// before its scheduled time, alternately.
func TestSessionSuspendedAtAFiresLeadTimeCostsLatenessNotTheFire(t *testing.T) {
	t.Parallel()
	const total = 4
	a, b := startProxy(t, zktest.Addr(t)), startProxy(t, zktest.Addr(t))
	recv := newReceiver(t)
	c := newCluster(t, 2, withZK(a.Addr()+","+b.Addr()))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("blip", "* * * * * ?", total, recv.URL), 201, nil)
	if _, ok := recv.WaitFor(30*time.Second, func(ds []harness.Delivery) bool { return completeFires(ds, total) >= 2 }); !ok {
		t.Fatal("the job did not fire whole before the drops")
	}

	// Each drop is timed against the wall clock the peers schedule by: waiting for an instant, not for
	// something to happen.
	const hold = 50 * time.Millisecond
	first := time.Now().UTC().Truncate(time.Second).Add(2 * time.Second) // UTC, as the payloads' times are
	var targets []time.Time
	for i := range 6 {
		at := first.Add(time.Duration(i) * time.Second)
		before := 20 * time.Millisecond // suspended over the scheduled time
		if i%2 == 0 {
			before = 120 * time.Millisecond // suspended over the hand-off, 100 ms ahead
		}
		timer := time.NewTimer(time.Until(at.Add(-before)))
		<-timer.C
		// both at one moment: a client whose connection to one closes reconnects to the other at once, and
		// closing that fresh connection too would make it wait a second before its next try (go-zookeeper's
		// pause at the end of its server list), which is another fault
		tcpproxy.DropAll(hold, a, b)
		targets = append(targets, at)
	}

	if _, ok := recv.WaitFor(20*time.Second, func(ds []harness.Delivery) bool {
		got := fires(ds)
		for _, at := range targets {
			if len(got[at]) < total {
				return false
			}
		}
		return true
	}); !ok {
		got := fires(recv.Deliveries(nil))
		for _, at := range targets {
			if n := len(got[at]); n < total {
				t.Errorf("the fire at %s lost %d of its %d items to a %s reconnect", at.Format("15:04:05.000"), total-n, total, hold)
			}
		}
		t.FailNow()
	}
	noDoubleDelivery(t, recv)
	var waits []string
	for _, p := range c.peers {
		for _, m := range waitedLine.FindAllStringSubmatch(p.Log(), -1) {
			waits = append(waits, m[1]+" "+m[2]+" ms")
		}
	}
	if len(waits) == 0 {
		t.Fatal("no fire waited for the session: the drops missed every lead and scheduled time, and the test did not test what it says")
	}
	t.Logf("%d waits for the session over %d drops (stage, waited): %s", len(waits), len(targets), strings.Join(waits, ", "))
}

// waitedLine is the log line of a fire that waited for its session and went on.
var waitedLine = regexp.MustCompile(`fire waited for the ZooKeeper session, then went on.* stage=(\w+) waited_ms=(\d+)`)

// startProxy starts a proxy to target for the test's length.
func startProxy(t *testing.T, target string) *tcpproxy.Proxy {
	t.Helper()
	p, err := tcpproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Close)
	return p
}
