package integration

import (
	"net"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
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
	a, b := newDropProxy(t, zktest.Addr(t)), newDropProxy(t, zktest.Addr(t))
	recv := newReceiver(t)
	c := newCluster(t, 2, withZK(a.addr+","+b.addr))
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
		dropAll(hold, a, b)
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

// dropProxy forwards TCP connections from a loopback port to target; drop closes every connection and holds
// the new ones for a while before connecting them, as a network heal that resets connections does.
type dropProxy struct {
	addr   string
	target string
	ln     net.Listener

	mu        sync.Mutex
	conns     map[net.Conn]struct{}
	holdUntil time.Time
	wg        sync.WaitGroup
}

func newDropProxy(t *testing.T, target string) *dropProxy {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	p := &dropProxy{addr: ln.Addr().String(), target: target, ln: ln, conns: map[net.Conn]struct{}{}}
	p.wg.Add(1)
	go p.accept()
	t.Cleanup(p.close)
	return p
}

func (p *dropProxy) accept() {
	defer p.wg.Done()
	for {
		c, err := p.ln.Accept()
		if err != nil {
			return
		}
		p.mu.Lock()
		p.conns[c] = struct{}{}
		wait := time.Until(p.holdUntil)
		p.mu.Unlock()
		p.wg.Add(1)
		go p.serve(c, wait)
	}
}

// serve connects c to the target after wait (the hold of a drop) and copies both ways until either side ends.
func (p *dropProxy) serve(c net.Conn, wait time.Duration) {
	defer p.wg.Done()
	if wait > 0 {
		timer := time.NewTimer(wait) // the fault's length, not a wait for something to happen
		<-timer.C
	}
	up, err := net.Dial("tcp", p.target)
	if err != nil {
		c.Close()
		return
	}
	p.mu.Lock()
	_, open := p.conns[c] // a drop or close during the hold closed c
	if open {
		p.conns[up] = struct{}{}
	}
	p.mu.Unlock()
	if !open {
		up.Close()
		return
	}
	p.wg.Add(1)
	go func() {
		defer p.wg.Done()
		proxyCopy(up, c)
	}()
	proxyCopy(c, up)
}

// proxyCopy copies src to dst until either ends, then closes both.
func proxyCopy(dst, src net.Conn) {
	buf := make([]byte, 32<<10)
	for {
		n, err := src.Read(buf)
		if n > 0 {
			if _, werr := dst.Write(buf[:n]); werr != nil {
				break
			}
		}
		if err != nil {
			break
		}
	}
	dst.Close()
	src.Close()
}

// dropAll closes every connection of the proxies at one moment and holds the new ones for hold. The
// connections are taken from all of them before any is closed: a client whose connection to one closes
// reconnects to the other at once, and closing that fresh connection too would make it wait a second
// before its next try (go-zookeeper's pause at the end of its server list), which is another fault.
func dropAll(hold time.Duration, proxies ...*dropProxy) {
	var conns []net.Conn
	for _, p := range proxies {
		p.mu.Lock()
		for c := range p.conns {
			conns = append(conns, c)
		}
		p.conns = map[net.Conn]struct{}{}
		p.holdUntil = time.Now().Add(hold)
		p.mu.Unlock()
	}
	for _, c := range conns {
		c.Close()
	}
}

func (p *dropProxy) close() {
	p.ln.Close()
	dropAll(0, p)
	p.wg.Wait()
}
