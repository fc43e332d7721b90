package cluster

import (
	"errors"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func TestPreferredLeader(t *testing.T) {
	ins := map[string]string{"a@-@1": "10.0.0.1", "b@-@2": "10.0.0.2", "c@-@3": "10.0.0.3"}
	counts := map[string]int{}
	for i := range 3000 {
		job := fmt.Sprintf("job-%d", i)
		p := preferredLeader(job, "a@-@1", ins, nil)
		for _, me := range []string{"b@-@2", "c@-@3"} { // every peer names the same one
			if q := preferredLeader(job, me, ins, nil); q != p {
				t.Fatalf("%s: %s names %s, a names %s", job, me, q, p)
			}
		}
		without := map[string]string{"b@-@2": "10.0.0.2", "c@-@3": "10.0.0.3"} // a registered, not listed yet
		if q := preferredLeader(job, "a@-@1", without, nil); q != p {
			t.Fatalf("%s: a not listed yet names %s, listed %s", job, q, p)
		}
		disabled := map[string]string{ins[p]: ServerDisabled}
		if q := preferredLeader(job, "x@-@9", ins, disabled); q == p && p != "x@-@9" {
			t.Fatalf("%s: %s's server is disabled, still preferred", job, p)
		}
		counts[p]++
	}
	for id, n := range counts { // spread: each of three gets about a third
		if n < 800 || n > 1200 {
			t.Fatalf("%s preferred for %d of 3000 jobs: %v", id, n, counts)
		}
	}
}

// When a job's leader leaves, the survivors do not race for the leadership: the one preferred for the job
// campaigns, the others put theirs off, so each job is led next by its preferred survivor. By a race, 16 jobs
// would all go to their preferred survivor once in 65,536 runs.
func TestTheNextLeaderIsThePreferredSurvivor(t *testing.T) {
	ns := zktest.Namespace("preferred")
	x := startPeer(t, ns, "10.0.7.9@-@9", "10.0.7.9")
	var jobs []string
	for i := range 16 {
		job := fmt.Sprintf("j%d", i)
		if _, err := x.r.CreateJob(testJob(job, 2)); err != nil {
			t.Fatal(err)
		}
		jobs = append(jobs, job)
	}
	for _, job := range jobs { // x leads every job before a starts: a preferred for a job x has not campaigned
		// for yet (a slow machine) would campaign at once and lead it with x still there
		waitJob(t, x, job, "x leads", func(s *JobSnapshot) bool { return s.IsLeader() })
	}
	// the others' campaigns put off for longer than the test: a preferred survivor slowed down (-race, a busy
	// machine) must not lose its job to one that campaigned after the usual 2 s
	putOff := func(r *Registry) { r.later.delay = time.Minute }
	a := startPeerWith(t, ns, "10.0.7.1@-@1", "10.0.7.1", putOff)
	b := startPeerWith(t, ns, "10.0.7.2@-@2", "10.0.7.2", putOff)
	for _, job := range jobs {
		waitJob(t, a, job, "x leads, b registered", func(s *JobSnapshot) bool {
			return s.Leader == "10.0.7.9@-@9" && s.Online("10.0.7.2@-@2") && s.Registered
		})
		waitJob(t, b, job, "a registered", func(s *JobSnapshot) bool { return s.Online("10.0.7.1@-@1") && s.Registered })
	}
	x.close()
	survivors := map[string]string{"10.0.7.1@-@1": "10.0.7.1", "10.0.7.2@-@2": "10.0.7.2"}
	for _, job := range jobs {
		snap := waitJob(t, a, job, "a new leader", func(s *JobSnapshot) bool { return s.Leader != "" && s.Leader != "10.0.7.9@-@9" })
		if want := preferredLeader(job, "10.0.7.1@-@1", survivors, nil); snap.Leader != want {
			t.Fatalf("%s: led by %s, the preferred survivor is %s", job, snap.Leader, want)
		}
	}
}

// A preferred candidate that does not campaign (its registry stopped, its session and instance node still
// there) does not leave the job leaderless: the others campaign campaignDelay later.
func TestAnotherPeerCampaignsWhenThePreferredOneDoesNot(t *testing.T) {
	ns := zktest.Namespace("putoff")
	x := startPeer(t, ns, "10.0.8.9@-@9", "10.0.8.9")
	survivors := map[string]string{"10.0.8.1@-@1": "10.0.8.1", "10.0.8.2@-@2": "10.0.8.2"}
	job := ""
	for i := 0; job == ""; i++ { // a job whose preferred survivor is a
		if name := fmt.Sprintf("j%d", i); preferredLeader(name, "10.0.8.1@-@1", survivors, nil) == "10.0.8.1@-@1" {
			job = name
		}
	}
	createLed(t, x, job, 2)
	a := startPeer(t, ns, "10.0.8.1@-@1", "10.0.8.1")
	b := startPeer(t, ns, "10.0.8.2@-@2", "10.0.8.2")
	for _, p := range []*peer{a, b} {
		waitJob(t, p, job, "all registered", func(s *JobSnapshot) bool { return len(s.Instances) == 3 && s.Registered })
	}
	a.r.Stop() // a's instance node stays: b sees a preferred candidate that never campaigns
	x.close()
	snap := waitJob(t, b, job, "b leads", func(s *JobSnapshot) bool { return s.IsLeader() })
	if !snap.Online("10.0.8.1@-@1") {
		t.Fatal("a's instance node went: the test did not keep the preferred candidate listed")
	}
}

// A campaign does not wait for its create: a stopped peer's many leaderships are campaigned for together, their
// creates on their way at once, not one per refresh worker (32) at a time. The creates are held here until
// every campaign has sent its own or is queued for a sender (4 here); a campaign that waited for its outcome,
// or for a sender, would hold a worker, and no more than 32 (36) could be begun.
func TestCampaignsDoNotWaitForTheirCreates(t *testing.T) {
	ns := zktest.Namespace("campaigns")
	x := startPeer(t, ns, "10.0.9.9@-@9", "10.0.9.9")
	const n = 80
	for i := range n {
		if _, err := x.r.CreateJob(testJob(fmt.Sprintf("j%d", i), 1)); err != nil {
			t.Fatal(err)
		}
	}
	for i := range n { // x leads every job before b starts: b's campaigns would race x's
		waitJob(t, x, fmt.Sprintf("j%d", i), "x leads", func(s *JobSnapshot) bool { return s.IsLeader() })
	}
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	var gated atomic.Bool
	b := startPeerWith(t, ns, "10.0.9.1@-@1", "10.0.9.1", func(r *Registry) {
		r.campaigns.max = 4
		create := r.campaigns.create
		r.campaigns.create = func(p []string, data []byte, taken func(int) bool) []error {
			if gated.Load() {
				<-held
			}
			return create(p, data, taken)
		}
	})
	t.Cleanup(release) // before b's registry stops: it waits for the creates
	for i := range n {
		waitJob(t, b, fmt.Sprintf("j%d", i), "x leads, b registered", func(s *JobSnapshot) bool {
			return s.Leader == "10.0.9.9@-@9" && s.Registered
		})
	}
	gated.Store(true)
	x.close()
	testutil.Eventually(t, "every campaign's create sent or queued", 15*time.Second, func() bool {
		b.r.campaigns.mu.Lock()
		defer b.r.campaigns.mu.Unlock()
		return len(b.r.campaigns.jobs) == n
	})
	release()
	for i := range n {
		waitJob(t, b, fmt.Sprintf("j%d", i), "b leads", func(s *JobSnapshot) bool { return s.IsLeader() })
	}
}

// A campaign kicked while the job's create is on its way sends no second create, and campaigns again once the
// first has its outcome (its leader may be gone by then); one not kicked meanwhile does not.
func TestCampaignSetCampaignsAgainWhenKickedMeanwhile(t *testing.T) {
	var c campaignSet
	if !c.begin("j") {
		t.Fatal("a first campaign refused")
	}
	if c.begin("j") {
		t.Fatal("a second create sent while the first is on its way")
	}
	if !c.end("j") {
		t.Fatal("a campaign kicked meanwhile is not run again")
	}
	if !c.begin("j") || c.end("j") {
		t.Fatal("a campaign not kicked meanwhile is run again")
	}
	if c.jobs != nil {
		t.Fatal("the emptied set keeps its map")
	}
}

// Campaigns waiting for a sender go by due (when their job's fires next need a leader), earliest first, the
// jobs with no due time last, by name among equals.
func TestCampaignSetSendsTheEarliestDueFirst(t *testing.T) {
	base := time.Unix(1000, 0)
	due := map[string]time.Time{"a": base.Add(40 * time.Second), "b": base.Add(5 * time.Second),
		"c": {}, "d": base.Add(5 * time.Second), "e": base}
	c := campaignSet{max: 1, due: func(job string) time.Time { return due[job] }}
	for _, job := range []string{"x", "a", "b", "c", "d", "e"} {
		if !c.begin(job) {
			t.Fatalf("%s refused", job)
		}
		if took := c.take(&jobEntry{name: job}); took != (job == "x") {
			t.Fatalf("%s: own sender %v, want only the first", job, took)
		}
	}
	var order [][]string
	for b := c.nextBatch(2); b != nil; b = c.nextBatch(2) {
		var names []string
		for _, e := range b {
			names = append(names, e.name)
		}
		order = append(order, names)
	}
	if want := [][]string{{"e", "b"}, {"d", "a"}, {"c"}}; !slices.EqualFunc(order, want, slices.Equal) {
		t.Fatalf("sent %v, want %v", order, want)
	}
	if c.senders != 0 || c.waiting != nil {
		t.Fatalf("%d senders and %d waiting left", c.senders, len(c.waiting))
	}
}

// A peer's campaigns go up to campaignBatch to a multi of their own; a create refused (another peer leads the
// job) costs one request more: the creates before it go together, then those after it, and the refused one
// alone gets its error.
func TestCreateLeadersSplitsAtARefusal(t *testing.T) {
	ns := zktest.Namespace("createleaders")
	a := startPeer(t, ns, "10.0.6.1@-@1", "10.0.6.1")
	b := startPeer(t, ns, "10.0.6.2@-@2", "10.0.6.2")
	const n = 10
	paths := make([]string, n)
	for i := range n {
		job := fmt.Sprintf("cl%d", i)
		if err := a.s.ensurePath(a.r.p.Election(job)); err != nil {
			t.Fatal(err)
		}
		paths[i] = a.r.p.LeaderInstance(job)
	}
	for _, i := range []int{2, 6} { // b leads these already
		if err := b.s.create(paths[i], []byte("b"), zk.FlagEphemeral); err != nil {
			t.Fatal(err)
		}
	}
	before := a.s.Requests()
	errs := a.r.createLeaders(paths, []byte("a"), nil)
	after := a.s.Requests()
	for i, err := range errs {
		var want error
		if i == 2 || i == 6 {
			want = zk.ErrNodeExists
		}
		if !errors.Is(err, want) {
			t.Errorf("create %d: %v, want %v", i, err, want)
		}
		data, st, err := a.s.get(paths[i])
		switch {
		case err != nil:
			t.Errorf("leader node %d: %v", i, err)
		case want == nil && (string(data) != "a" || st.EphemeralOwner != a.s.ID()):
			t.Errorf("leader node %d: %q of session %x, want a's", i, data, st.EphemeralOwner)
		case want != nil && string(data) != "b":
			t.Errorf("leader node %d: %q, want b's kept", i, data)
		}
	}
	// [0,10) refused at 2; [0,2) goes; [3,10) refused at 6; [3,6) and [7,10) go
	if m, c := after.Multi-before.Multi, after.Create-before.Create; m != 5 || c != 0 {
		t.Errorf("%d multis and %d creates, want 5 multis", m, c)
	}
}

// A campaign whose job's leader node another peer created meanwhile sends no create: the recursive watch's
// event says the node exists before its read says whose. At a stop the survivor whose events lagged sent
// creates for jobs the other had won, and each refusal held its sender for one more multi.
func TestACampaignForAJobWhoseLeaderWasCreatedSendsNothing(t *testing.T) {
	ns := zktest.Namespace("leaderseen")
	x := startPeer(t, ns, "10.0.12.9@-@9", "10.0.12.9")
	createLed(t, x, "j", 1)
	held := make(chan struct{})
	release := sync.OnceFunc(func() { close(held) })
	var gated atomic.Bool
	var errs atomic.Pointer[[]error]
	b := startPeerWith(t, ns, "10.0.12.1@-@1", "10.0.12.1", func(r *Registry) {
		create := r.campaigns.create
		r.campaigns.create = func(p []string, data []byte, taken func(int) bool) []error {
			if gated.Load() {
				<-held
			}
			out := create(p, data, taken)
			errs.Store(&out)
			return out
		}
	})
	t.Cleanup(release)
	waitJob(t, b, "j", "x leads, b registered", func(s *JobSnapshot) bool { return s.Leader == "10.0.12.9@-@9" && s.Registered })
	gated.Store(true)
	x.close()
	testutil.Eventually(t, "b's campaign for j on its way", 15*time.Second, func() bool {
		b.r.campaigns.mu.Lock()
		defer b.r.campaigns.mu.Unlock()
		return len(b.r.campaigns.jobs) == 1
	})
	c := dialTest(t) // another peer's create lands first
	defer c.Close()
	if err := c.create(b.r.p.LeaderInstance("j"), []byte("10.0.12.3@-@3"), zk.FlagEphemeral); err != nil {
		t.Fatal(err)
	}
	testutil.Eventually(t, "b knows j's leader node exists", 15*time.Second, func() bool { return b.r.leaderKnown(b.r.entry("j")) })
	before := b.s.Requests()
	release()
	testutil.Eventually(t, "b's create's outcome", 15*time.Second, func() bool { return errs.Load() != nil })
	after := b.s.Requests()
	if got := *errs.Load(); len(got) != 1 || !errors.Is(got[0], zk.ErrNodeExists) {
		t.Fatalf("b's campaign: %v, want ErrNodeExists without a request", got)
	}
	if m, n := after.Multi-before.Multi, after.Create-before.Create; m != 0 || n != 0 {
		t.Errorf("b sent %d multis and %d creates for a job whose leader node it knew of", m, n)
	}
	waitJob(t, b, "j", "the other leads", func(s *JobSnapshot) bool { return s.Leader == "10.0.12.3@-@3" })
}

// A leader node reported created leaves the job's direct counts alone (a load in flight stays valid: at a
// restart the restarted peer's 100,000 loads met ~33,000 creations), and a read answered before the creation
// (no node) does not undo the mark: the creation's own read says whose the node is.
func TestALeaderNodeSeenSurvivesAnOlderRead(t *testing.T) {
	ns := zktest.Namespace("leaderseenread")
	a := startPeer(t, ns, "10.0.14.1@-@1", "10.0.14.1")
	createLed(t, a, "j", 1)
	e := a.r.entry("j")
	e.mu.Lock()
	e.st.leader = "" // as if its deletion was applied
	e.mu.Unlock()
	before := e.directCount()
	a.r.leaderCreated(e)
	if e.directCount() != before {
		t.Fatal("a reported creation changed the job's direct counts: a load in flight would be read again")
	}
	a.r.applyLeader(e, leaderNode{}, before.leader) // a read answered before the creation
	if !a.r.leaderKnown(e) {
		t.Fatal("an older read of no leader node undid the reported creation")
	}
	a.r.applyLeader(e, leaderNode{id: "10.0.14.9@-@9"}, before.leader) // the creation's read
	if e.directCount() != before || a.r.Job("j").Leader != "10.0.14.9@-@9" {
		t.Fatalf("leader %q after the creation's read", a.r.Job("j").Leader)
	}
	e.mu.Lock()
	seen := e.st.leaderSeen
	e.mu.Unlock()
	if seen {
		t.Fatal("the mark outlived the read that named the leader")
	}
}
