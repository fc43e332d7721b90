package sharding

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/go-zookeeper/zk"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// A peer that leaves before it registered on a job it owns items of leaves no instance node of the job: only
// the peers' change tells, and the job's leader reshards it then (the reconcile loop, an hour off here, would
// be next).
func TestAPeerGoneBeforeItRegisteredIsReshardedAway(t *testing.T) {
	ns := zktest.Namespace("gonebefore")
	a := startNode(t, ns, "10.5.1.1", clock.Real{})
	// a peer that never loads the job: its peer node alone, on a session of its own
	conn, _, err := zk.Connect([]string{zktest.Addr(t)}, 4*time.Second, zk.WithLogInfo(false))
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	ghost := cluster.Identity{InstanceID: "10.5.1.2@-@1", ServerIP: "10.5.1.2"}
	data, _ := json.Marshal(ghost)
	if _, err := conn.Create(a.r.Paths().Peer(ghost.InstanceID), data, zk.FlagEphemeral, zk.WorldACL(zk.PermAll)); err != nil {
		t.Fatal(err)
	}
	peers := livePeers(t, a, 2)
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 2, "http://127.0.0.1:9/x"
	if _, err := a.r.CreateJobSharded(cfg, FirstOwners(peers, cfg)); err != nil {
		t.Fatal(err)
	}
	waitFor(t, a, "j", "an item waiting for the other peer's registration", func(s *cluster.JobSnapshot) bool {
		return s.IsLeader() && !s.Necessary && s.Sharded() && s.Settled && len(s.MyItems()) == 1
	})
	conn.Close() // its peer node goes
	snap := waitFor(t, a, "j", "every item on a", func(s *cluster.JobSnapshot) bool {
		return !s.Necessary && s.Sharded() && s.Settled && len(s.MyItems()) == 2
	})
	if snap.Item(0).Owner != a.r.Me().InstanceID || snap.Item(1).Owner != a.r.Me().InstanceID {
		t.Fatalf("owners %+v", snap.Items)
	}
}
