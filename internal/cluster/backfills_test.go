package cluster

import (
	"errors"
	"testing"
	"time"

	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// The backfill node's fences: one live owner at a time, a deposed owner's progress write refused, an owner
// gone with its session leaving the backfill to the next claim, and the watch firing on each change.
func TestBackfillClaimsAreFenced(t *testing.T) {
	ns := zktest.Namespace("backfill-fence")
	a, b := startPeer(t, ns, "a", "127.0.0.1"), startPeer(t, ns, "b", "127.0.0.2")

	nodes, owned, changed, err := b.r.BackfillNodes(true)
	if err != nil || len(nodes) != 0 || len(owned) != 0 {
		t.Fatalf("empty namespace: %v %v %v", nodes, owned, err)
	}
	if err := a.r.CreateBackfill("job", "bf1", []byte(`{"v":0}`)); err != nil {
		t.Fatal(err)
	}
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not fire on a new backfill")
	}
	nodes, _, _, err = b.r.BackfillNodes(false)
	if err != nil || len(nodes) != 1 || nodes[0].Job != "job" || nodes[0].ID != "bf1" {
		t.Fatalf("nodes %+v, %v", nodes, err)
	}
	v0 := nodes[0].Version

	va, err := a.r.ClaimBackfill("job", "bf1", []byte(`{"v":1}`), v0)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.ClaimBackfill("job", "bf1", []byte(`{"v":1}`), va); !errors.Is(err, ErrBackfillOwned) {
		t.Fatalf("second claim: %v, want ErrBackfillOwned", err)
	}
	if _, err := a.r.ClaimBackfill("job", "bf1", []byte(`{"v":1}`), va); err != nil {
		t.Fatalf("the owner's own claim again: %v", err)
	}
	va++
	// an operator's write (cancel) in between: the owner's next progress write is refused
	if _, err := b.r.WriteBackfill("job", "bf1", []byte(`{"cancelled":true}`), va); err != nil {
		t.Fatal(err)
	}
	if _, err := a.r.WriteBackfill("job", "bf1", []byte(`{"v":2}`), va); !errors.Is(err, ErrBackfillChanged) {
		t.Fatalf("stale write: %v, want ErrBackfillChanged", err)
	}
	if _, err := a.r.WriteBackfill("job", "nope", nil, 0); !errors.Is(err, ErrNoBackfill) {
		t.Fatalf("write of a missing backfill: %v", err)
	}

	_, owned, changed, err = b.r.BackfillNodes(true)
	if err != nil || !owned["bf1"] {
		t.Fatalf("owned %v, %v", owned, err)
	}
	a.close() // a's session ends: its owner node goes
	select {
	case <-changed:
	case <-time.After(10 * time.Second):
		t.Fatal("the watch did not fire when the owner went")
	}
	cur, err := b.r.ReadBackfill("job", "bf1")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.r.ClaimBackfill("job", "bf1", []byte(`{"v":3}`), cur.Version); err != nil {
		t.Fatalf("claim after the owner went: %v", err)
	}
	if err := b.r.ReleaseBackfill("bf1"); err != nil {
		t.Fatal(err)
	}
	if _, owned, _, _ := b.r.BackfillNodes(false); owned["bf1"] {
		t.Fatal("released backfill still owned")
	}
}
