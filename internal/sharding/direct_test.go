package sharding

import (
	"context"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// noSettle: the tests' coordinators reshard as soon as a change comes, however recently they resharded, for
// no fire follows a flag here (TestAReshardingRightAfterAnotherIsLeftToAFire covers CommitSettle).
const noSettle = -1

// flagCounting counts the leader's necessary flags.
type flagCounting struct {
	*cluster.Registry
	flags atomic.Int32
}

func (r *flagCounting) SetNecessary(job string) (bool, error) {
	r.flags.Add(1)
	return r.Registry.SetNecessary(job)
}

// startCounting starts a node whose coordinator counts its flags; firing, if not nil, is its Firing, and settle
// its CommitSettle.
func startCounting(t *testing.T, ns, ip string, firing func(string) bool, settle time.Duration) (*node, *flagCounting) {
	t.Helper()
	n := newNode(t, ns, ip, clock.Real{})
	reg := &flagCounting{Registry: n.r}
	n.c = NewCoordinator(CoordinatorConfig{Registry: reg, Logger: quiet, ServerGC: time.Hour, ReconcileTick: time.Hour,
		Firing: firing, CommitSettle: settle})
	if err := n.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	startRegistry(t, n)
	t.Cleanup(n.stop)
	return n, reg
}

// twoOwners makes a the leader of a 2-item job j, then starts b (at bIP, in a's namespace ns) and gives it
// item 1; it returns b and b's instance id. b starts once a leads: started together, either may win the
// job's election.
func twoOwners(t *testing.T, a *node, ns, bIP string) (*node, string) {
	t.Helper()
	newJob(t, a, "j", 2)
	waitFor(t, a, "j", "a leads", func(s *cluster.JobSnapshot) bool { return leads(s) })
	b := startNode(t, ns, bIP, clock.Real{})
	bID := b.r.Me().InstanceID
	waitFor(t, a, "j", "b registered", func(s *cluster.JobSnapshot) bool { return s.IsLeader() && s.Online(bID) })
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "j", "b owns item 1", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && s.Item(1).Owner == bID })
	return b, bID
}

// A job an instance left, with no item running, is resharded by the leader's direct commit: no necessary flag
// (which makes every peer's fire wait), no processing node, one round trip. Before, the leader flagged it,
// and its eager loop read the running items, created processing and committed: four round trips per job
// while a stopped peer's thousands of jobs waited.
func TestAJobAnInstanceLeftIsReshardedWithoutAFlag(t *testing.T) {
	ns := zktest.Namespace("direct")
	a, reg := startCounting(t, ns, "10.9.4.1", nil, noSettle)
	b, bID := twoOwners(t, a, ns, "10.9.4.2")
	flags := reg.flags.Load()
	b.stop()
	waitFor(t, a, "j", "item 1 resharded to a", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && !s.Online(bID) && s.Item(1).Owner == s.Me
	})
	if n := reg.flags.Load() - flags; n != 0 {
		t.Fatalf("the leader flagged the job %d times: it resharded no item running without a direct commit", n)
	}
}

// A job an instance left while an item of it runs cannot be resharded now (the commit's fence refuses): the
// leader flags it, and the resharding waits for the run to end (here the fire's; ElasticJob's leader never
// reshards while an item runs).
func TestAJobWithAnItemRunningIsFlaggedNotResharded(t *testing.T) {
	ns := zktest.Namespace("directrun")
	a, reg := startCounting(t, ns, "10.9.5.1", nil, noSettle)
	b, bID := twoOwners(t, a, ns, "10.9.5.2")
	snap := a.r.Job("j")
	run := cluster.Running{InstanceID: snap.Me, ExecutionID: "e1", TaskID: "t1", Source: ejserver.SourceNormal, ScheduledAt: time.Unix(100, 0)}
	if err := a.r.BeginItem("j", 0, snap.Item(0).OwnerVersion, run, false); err != nil {
		t.Fatal(err)
	}
	b.stop()
	waitFor(t, a, "j", "flagged", func(s *cluster.JobSnapshot) bool { return s.Necessary && !s.Online(bID) })
	if reg.flags.Load() == 0 {
		t.Fatal("flagged by another than the leader's coordinator")
	}
	if owner := a.r.Job("j").Item(1).Owner; owner != bID {
		t.Fatalf("item 1 resharded to %s while item 0 ran", owner)
	}
	if err := endRun(a.r, "j", 0, run); err != nil {
		t.Fatal(err)
	}
	if err := a.c.Reshard(context.Background(), "j"); err != nil { // the job's next fire
		t.Fatal(err)
	}
	waitFor(t, a, "j", "resharded once the item ended", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Item(1).Owner == s.Me
	})
}

// Near a fire of the job (Firing) the leader does not reshard a job an instance left by itself: committed
// between the fire's hand-off and its items' begins, the move of an item could leave it to neither peer. The
// job is flagged and left to the fire, whose resharding its peers wait for (here, a.c.Reshard).
func TestAReshardingNearAFireIsLeftToTheFire(t *testing.T) {
	ns := zktest.Namespace("directnear")
	var firing atomic.Bool
	a, reg := startCounting(t, ns, "10.9.6.1", func(string) bool { return firing.Load() }, noSettle)
	b, bID := twoOwners(t, a, ns, "10.9.6.2")
	firing.Store(true)
	b.stop()
	leftToTheFire(t, a, reg, bID, "near a fire")
}

// leftToTheFire checks that the leader a flagged job j when b's instance bID left, without resharding item 1
// away from b (why: when), and that the fire's resharding (a.c.Reshard) then gives item 1 to a.
func leftToTheFire(t *testing.T, a *node, reg *flagCounting, bID, when string) {
	t.Helper()
	waitFor(t, a, "j", "flagged", func(s *cluster.JobSnapshot) bool { return s.Necessary && !s.Online(bID) })
	if reg.flags.Load() == 0 {
		t.Fatal("flagged by another than the leader's coordinator")
	}
	if owner := a.r.Job("j").Item(1).Owner; owner != bID {
		t.Fatalf("item 1 resharded to %s %s", owner, when)
	}
	if err := a.c.Reshard(context.Background(), "j"); err != nil { // the fire
		t.Fatal(err)
	}
	waitFor(t, a, "j", "resharded by the fire", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Item(1).Owner == s.Me
	})
}

// blockedRunning holds a resharding once armed, until release is closed: at its first read of a job's running
// items (an eager or waiting resharding), or its first commit (a fire's resharding reads nothing first).
type blockedRunning struct {
	*cluster.Registry
	armed   atomic.Bool
	reading chan struct{} // closed when that read starts
	release chan struct{}
	once    sync.Once
}

func (r *blockedRunning) RunningItems(job string, n int) (map[int]cluster.Running, error) {
	r.hold()
	return r.Registry.RunningItems(job, n)
}

func (r *blockedRunning) CommitSharding(job string, owners []string, unfenced map[int]bool) error {
	r.hold()
	return r.Registry.CommitSharding(job, owners, unfenced)
}

// hold holds the first call once armed until release.
func (r *blockedRunning) hold() {
	first := false
	if r.armed.Load() {
		r.once.Do(func() { first = true; close(r.reading) })
	}
	if first {
		<-r.release
	}
}

// startBlocked starts a node whose registry's first read of running items once armed is held
// (blockedRunning), its coordinator not started (nothing reshards on its own), leading a sharded 2-item job j.
func startBlocked(t *testing.T, ns, ip string, firing func(string) bool) (*node, *blockedRunning) {
	t.Helper()
	n := newNode(t, ns, ip, clock.Real{})
	reg := &blockedRunning{Registry: n.r, reading: make(chan struct{}), release: make(chan struct{})}
	n.c = NewCoordinator(CoordinatorConfig{Registry: reg, Logger: quiet, ServerGC: time.Hour, ReconcileTick: time.Hour,
		Firing: firing, CommitSettle: noSettle})
	startRegistry(t, n)
	t.Cleanup(n.stop)
	shardedJob(t, n, "j", 2) // items to look at for running ones
	return n, reg
}

// sharedBy waits until the call running for j is shared by another.
func sharedBy(t *testing.T, c *Coordinator, what string) {
	t.Helper()
	testutil.Eventually(t, what, 5*time.Second, func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		call := c.inflight["j"]
		return call != nil && call.sharers == 1
	})
}

// A fire's resharding that shares an eager attempt refused near the fire (errFiring) runs its own: the fire
// is the one the guard leaves the resharding to. It returned the shared refusal, and the fire was skipped
// ("resharding as leader: a fire of the job is near"), its peers waiting 30 s for a resharding nobody made.
func TestAFiresReshardingSharingARefusedEagerOneRunsItsOwn(t *testing.T) {
	n, reg := startBlocked(t, zktest.Namespace("directshare"), "10.9.7.1", func(string) bool { return true })
	if _, err := n.r.SetNecessary("j"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, n, "j", "flagged", func(s *cluster.JobSnapshot) bool { return s.Necessary })
	reg.armed.Store(true)
	eager := make(chan struct{})
	go func() { defer close(eager); n.c.reshardNow("j") }() // the eager loop's attempt
	<-reg.reading
	fire := make(chan error, 1)
	go func() { fire <- n.c.Reshard(context.Background(), "j") }()
	sharedBy(t, n.c, "the fire's resharding sharing the eager one")
	close(reg.release)
	<-eager
	if err := <-fire; err != nil {
		t.Fatalf("the fire's resharding: %v", err)
	}
	waitFor(t, n, "j", "resharded", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) })
}

// A flag the leader sets is in its cache at once, so a resharding that commits before the flag's watch event
// is read back removes it in the same transaction. It outlived such a resharding (a fire's, right after a
// direct one was refused near the fire), and every peer's fire waited 30 s for another.
func TestAFlagSetIsRemovedByTheNextCommit(t *testing.T) {
	ns := zktest.Namespace("flagcache")
	n := newNode(t, ns, "10.9.8.1", clock.Real{}) // its coordinator is not started: nothing reshards on its own
	startRegistry(t, n)
	t.Cleanup(n.stop)
	shardedJob(t, n, "j", 2)
	if created, err := n.r.SetNecessary("j"); err != nil || !created {
		t.Fatalf("flag: %v, %v", created, err)
	}
	if !n.r.Job("j").Necessary {
		t.Fatal("a flag this peer set is not in its cache once set")
	}
	if err := n.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	if created, err := n.r.SetNecessary("j"); err != nil || !created {
		t.Fatalf("the resharding left the flag (this create: %v, %v)", created, err)
	}
}

// A flag is not set while a resharding of the job runs here: the flagging shares that resharding, and a job
// it resharded needs no flag. Set meanwhile, the flag could land after the resharding had built its commit
// without the flag's removal, and every peer's next fire waited 30 s for another resharding.
func TestNoFlagIsSetWhileAReshardingRuns(t *testing.T) {
	n, reg := startBlocked(t, zktest.Namespace("flagshare"), "10.9.9.1", nil)
	reg.armed.Store(true)
	fire := make(chan error, 1)
	go func() { fire <- n.c.Reshard(context.Background(), "j") }() // a fire's resharding, held at its read
	<-reg.reading
	flagged := make(chan error, 1)
	go func() {
		flagged <- n.c.flagOnce(context.Background(), "j", func(*cluster.JobSnapshot) bool { return true })
	}()
	sharedBy(t, n.c, "the flagging sharing the fire's resharding")
	close(reg.release)
	if err := <-fire; err != nil {
		t.Fatalf("the fire's resharding: %v", err)
	}
	if err := <-flagged; err != nil {
		t.Fatalf("the flagging: %v", err)
	}
	if created, err := n.r.SetNecessary("j"); err != nil || !created {
		t.Fatalf("a flag was set while the fire's resharding ran (this create: %v, %v)", created, err)
	}
}

// A job whose fire is always near (one firing every few seconds) is still rebalanced when an instance joins it:
// flagged, and resharded by its fire. Put back on the rebalance queue to wait for a quiet moment, it waited
// forever, and the instance that joined never got an item.
func TestAJobAlwaysFiringIsRebalancedByItsFire(t *testing.T) {
	ns := zktest.Namespace("directfast")
	a, _ := startCounting(t, ns, "10.9.10.1", func(string) bool { return true }, noSettle)
	newJob(t, a, "j", 4)
	waitFor(t, a, "j", "a leads", func(s *cluster.JobSnapshot) bool { return leads(s) })
	if err := a.c.Reshard(context.Background(), "j"); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "j", "sharded on a", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && len(s.MyItems()) == 4 })
	b := startNode(t, ns, "10.9.10.2", clock.Real{})
	bID := b.r.Me().InstanceID
	waitFor(t, a, "j", "flagged for the rebalance", func(s *cluster.JobSnapshot) bool { return s.Online(bID) && s.Necessary })
	if err := a.c.Reshard(context.Background(), "j"); err != nil { // the fire
		t.Fatal(err)
	}
	waitFor(t, a, "j", "b owns items", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Item(2).Owner == bID && s.Item(3).Owner == bID
	})
}

// A resharding that is not a fire's, right after another of the same job, is left to the job's fire: a fire
// held for the first decides its items once that is committed and begins them a round trip later, and a
// second commit in between could move an item the fire's peer had decided on, which neither peer then ran.
func TestAReshardingRightAfterAnotherIsLeftToAFire(t *testing.T) {
	ns := zktest.Namespace("settle")
	a, reg := startCounting(t, ns, "10.9.13.1", nil, time.Hour)
	b, bID := twoOwners(t, a, ns, "10.9.13.2") // its last step is a resharding
	b.stop()
	leftToTheFire(t, a, reg, bID, "right after the last resharding")
}

// A rebalance that meets a fire of the job (an instance joined just before it) waits for the fire's window to
// close and then reshards directly, without flagging: a flag set near the fire could land after the leader's
// own fire had found the sharding ready and before its peers' fires looked, and they waited 30 s for a
// resharding only the next fire made, and skipped the fire.
func TestARebalanceNearAFireWaitsForTheQuietMoment(t *testing.T) {
	ns := zktest.Namespace("quiet")
	var firing atomic.Bool
	var quietAt atomic.Int64
	n := newNode(t, ns, "10.9.15.1", clock.Real{})
	reg := &flagCounting{Registry: n.r}
	n.c = NewCoordinator(CoordinatorConfig{Registry: reg, Logger: quiet, ServerGC: time.Hour, ReconcileTick: time.Hour,
		Firing:       func(string) bool { return firing.Load() },
		QuietAt:      func(string) (time.Time, bool) { return time.Unix(0, quietAt.Load()), true },
		CommitSettle: noSettle})
	if err := n.c.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	startRegistry(t, n)
	t.Cleanup(n.stop)
	shardedJob(t, n, "j", 4)
	waitFor(t, n, "j", "sharded on a", func(s *cluster.JobSnapshot) bool { return shardingSettled(s) && len(s.MyItems()) == 4 })
	firing.Store(true)
	quietAt.Store(time.Now().Add(time.Second).UnixNano())
	b := startNode(t, ns, "10.9.15.2", clock.Real{})
	bID := b.r.Me().InstanceID
	waitFor(t, n, "j", "b registered", func(s *cluster.JobSnapshot) bool { return s.Online(bID) })
	testutil.Eventually(t, "the rebalance meets the fire", 10*time.Second, func() bool {
		return n.c.recheckPending("j") || reg.flags.Load() > 0
	})
	if s := n.r.Job("j"); s.Necessary || s.Item(2).Owner == bID || s.Item(3).Owner == bID {
		t.Fatalf("near the fire: flagged %v, items %v", s.Necessary, s.Items)
	}
	firing.Store(false) // the window closes at quietAt
	waitFor(t, n, "j", "b owns items", func(s *cluster.JobSnapshot) bool {
		return shardingSettled(s) && s.Item(2).Owner == bID && s.Item(3).Owner == bID
	})
	if f := reg.flags.Load(); f != 0 {
		t.Fatalf("the rebalance flagged the job %d times", f)
	}
}
