package engine

import (
	"errors"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/cluster"
)

// A node's trigger read by its instance (cluster.PeekTrigger) still waits until the fire's start record
// consumes it, in the same transaction: a claim of another version records nothing (the trigger was handed
// on meanwhile), the claim read records the start and deletes the trigger.
func TestATriggerClaimIsConsumedOnlyWithTheFiresStart(t *testing.T) {
	t.Parallel()
	regs := newRegistries(t, 1, "ja", "jb")
	startEngine(t, regs[0], time.Minute)
	svc, run := chain(t, regs[0], "claimed")
	fire := nodeFired(t, svc, "claimed", run.ID, "a")
	reg := regs[0]
	req, claim, ok, err := reg.PeekTrigger("ja")
	if err != nil || !ok || len(req.Workflow) == 0 {
		t.Fatalf("peek a's trigger: %+v %v %v", req, ok, err)
	}
	if waits, err := reg.WaitingTriggers("ja"); err != nil || len(waits) != 1 {
		t.Fatalf("after the peek, waiting triggers %+v, %v: want it still there", waits, err)
	}
	stale := &cluster.TriggerClaim{Job: "ja", Version: claim.Version + 1}
	if _, err := reg.RecordFireStart("ja", fire, "p1", 2, []int{0, 1}, []byte(`{"items":[0,1]}`), false, stale); !errors.Is(err, cluster.ErrTriggerTaken) {
		t.Fatalf("a start with a stale claim: %v, want ErrTriggerTaken", err)
	}
	if items, exists, err := reg.FireStartedItems("ja", fire); err != nil || exists || len(items) > 0 {
		t.Fatalf("a start refused for its claim left a ledger: items %v, exists %v, %v", items, exists, err)
	}
	if waits, _ := reg.WaitingTriggers("ja"); len(waits) != 1 {
		t.Fatalf("a start refused for its claim took the trigger: %+v", waits)
	}
	if _, err := reg.RecordFireStart("ja", fire, "p1", 2, []int{0, 1}, []byte(`{"items":[0,1]}`), false, claim); err != nil {
		t.Fatalf("a start with its claim: %v", err)
	}
	if items, _, err := reg.FireStartedItems("ja", fire); err != nil || len(items) != 2 {
		t.Fatalf("the fire's started items after the start: %v, %v", items, err)
	}
	if waits, err := reg.WaitingTriggers("ja"); err != nil || len(waits) != 0 {
		t.Fatalf("the trigger after the start that claimed it: %+v, %v; want it consumed", waits, err)
	}
	if gone, err := reg.DropTrigger("ja", claim); !gone || err != nil {
		t.Fatalf("dropping a consumed claim: gone %v, %v", gone, err)
	}
}
