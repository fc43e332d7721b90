package integration

import (
	"fmt"
	"net/http"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// waitSpread waits for a complete fire after `after` whose assignment equals want.
func waitSpread(t *testing.T, recv *harness.Receiver, job string, total int, after time.Time, want map[string][]int) time.Time {
	t.Helper()
	var last map[string][]int
	var at time.Time
	_, ok := recv.WaitFor(40*time.Second, func(ds []harness.Delivery) bool {
		ds = filter(ds, job)
		byFire := fires(ds)
		for fireAt, group := range byFire {
			if fireAt.Before(after) || len(group) != total {
				continue
			}
			got := map[string][]int{}
			for _, d := range group {
				got[d.Payload.InstanceID] = append(got[d.Payload.InstanceID], d.Payload.ShardingItem)
			}
			for k := range got {
				slices.Sort(got[k])
			}
			last = got
			if equalAssignment(got, want) {
				at = fireAt
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatalf("no fire of %s after %v spread as %v; last complete fire: %v", job, after.Format(time.TimeOnly), want, last)
	}
	return at
}

func equalAssignment(a, b map[string][]int) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if !slices.Equal(v, b[k]) {
			return false
		}
	}
	return true
}

func filter(ds []harness.Delivery, job string) []harness.Delivery {
	var out []harness.Delivery
	for _, d := range ds {
		if d.Payload.JobName == job {
			out = append(out, d)
		}
	}
	return out
}

// noDoubleDelivery fails if an item of one scheduled fire was POSTed by two peers (or twice) as a normal run.
func noDoubleDelivery(t *testing.T, recv *harness.Receiver) {
	t.Helper()
	seen := map[string]string{}
	for _, d := range recv.Deliveries(nil) {
		if d.Payload.Source != "NORMAL_TRIGGER" || d.Payload.Attempt != 1 {
			continue
		}
		key := fmt.Sprintf("%s/%s/%d", d.Payload.JobName, d.Payload.ScheduledAt.Format(time.RFC3339Nano), d.Payload.ShardingItem)
		if prev, dup := seen[key]; dup {
			t.Fatalf("item %s POSTed twice: by %s and by %s", key, prev, d.Payload.InstanceID)
		}
		seen[key] = d.Payload.InstanceID
	}
}

func TestItemsSpreadOverPeersAndRebalance(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 3)
	p1, p2, p3 := c.peers[0], c.peers[1], c.peers[2]
	mustDo(t, p1, "POST", "/api/v1/jobs", job("spread", "* * * * * ?", 10, recv.URL), http.StatusCreated, nil)

	// AVG_ALLOCATION over instances ordered by IP: 4/3/3, the remainder to the first
	waitSpread(t, recv, "spread", 10, time.Time{}, map[string][]int{
		p1.InstanceID(): {0, 1, 2, 9}, p2.InstanceID(): {3, 4, 5}, p3.InstanceID(): {6, 7, 8}})

	// a peer stops gracefully: the next fires spread 5/5
	if err := p3.Stop(20 * time.Second); err != nil {
		t.Fatalf("stop: %v", err)
	}
	stopped := time.Now()
	waitSpread(t, recv, "spread", 10, stopped, map[string][]int{p1.InstanceID(): {0, 1, 2, 3, 4}, p2.InstanceID(): {5, 6, 7, 8, 9}})

	// it starts again (a new process, a new instance id): 4/3/3 again
	if err := p3.Restart(); err != nil {
		t.Fatal(err)
	}
	restarted := time.Now()
	waitSpread(t, recv, "spread", 10, restarted, map[string][]int{
		p1.InstanceID(): {0, 1, 2, 9}, p2.InstanceID(): {3, 4, 5}, p3.InstanceID(): {6, 7, 8}})

	// fewer items: the extra ones disappear from the registry
	var v map[string]any
	mustDo(t, p2, "GET", "/api/v1/jobs/spread", nil, http.StatusOK, &v)
	spec := job("spread", "* * * * * ?", 4, recv.URL)
	mustDo(t, p2, "PUT", "/api/v1/jobs/spread", spec, http.StatusOK, nil, "If-Match", fmt.Sprintf(`"%v"`, v["version"]))
	shrunk := time.Now()
	waitSpread(t, recv, "spread", 4, shrunk, map[string][]int{p1.InstanceID(): {0, 3}, p2.InstanceID(): {1}, p3.InstanceID(): {2}})
	dump := string(mustDo(t, p1, "GET", "/api/v1/jobs/spread/dump", nil, http.StatusOK, nil))
	for i := 4; i < 10; i++ {
		if strings.Contains(dump, fmt.Sprintf("/sharding/%d |", i)) {
			t.Fatalf("item %d is still in the registry:\n%s", i, dump)
		}
	}
	noDoubleDelivery(t, recv)
}

func TestKilledLeaderIsReplacedAndTheJobResharded(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 3, withSessionTimeout(2*time.Second))
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("lead", "* * * * * ?", 6, recv.URL), http.StatusCreated, nil)
	var v struct {
		Leader string `json:"leader"`
	}
	deadline := time.Now().Add(20 * time.Second)
	for v.Leader == "" && time.Now().Before(deadline) {
		mustDo(t, c.peers[1], "GET", "/api/v1/jobs/lead", nil, http.StatusOK, &v)
	}
	var leader *harness.Peer
	var others []*harness.Peer
	for _, p := range c.peers {
		if p.InstanceID() == v.Leader {
			leader = p
		} else {
			others = append(others, p)
		}
	}
	if leader == nil {
		t.Fatalf("no peer is the leader %q", v.Leader)
	}
	waitSpread(t, recv, "lead", 6, time.Time{}, map[string][]int{
		c.peers[0].InstanceID(): {0, 1}, c.peers[1].InstanceID(): {2, 3}, c.peers[2].InstanceID(): {4, 5}})

	leader.Kill()
	killed := time.Now()
	want := map[string][]int{others[0].InstanceID(): {0, 1, 2}, others[1].InstanceID(): {3, 4, 5}}
	waitSpread(t, recv, "lead", 6, killed, want)
	var after struct {
		Leader string `json:"leader"`
		Status string `json:"status"`
	}
	mustDo(t, others[0], "GET", "/api/v1/jobs/lead", nil, http.StatusOK, &after)
	if after.Leader == "" || after.Leader == v.Leader || after.Status != "OK" {
		t.Fatalf("after the kill: leader %q (was %q), status %s", after.Leader, v.Leader, after.Status)
	}
	noDoubleDelivery(t, recv)
}

func TestOneItemThreePeersHasStandbys(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 3)
	mustDo(t, c.peers[0], "POST", "/api/v1/jobs", job("single", "* * * * * ?", 1, recv.URL), http.StatusCreated, nil)
	waitSpread(t, recv, "single", 1, time.Time{}, map[string][]int{c.peers[0].InstanceID(): {0}})
	if err := c.peers[0].Stop(20 * time.Second); err != nil {
		t.Fatal(err)
	}
	stopped := time.Now()
	waitSpread(t, recv, "single", 1, stopped, map[string][]int{c.peers[1].InstanceID(): {0}})
	noDoubleDelivery(t, recv)
}

// zkCli runs ZooKeeper's own CLI, as an ElasticJob operator would.
func zkCli(t *testing.T, server string, args ...string) string {
	t.Helper()
	cmd := exec.Command("/usr/share/zookeeper/bin/zkCli.sh", append([]string{"-server", server}, args...)...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("zkCli %v: %v\n%s", args, err, out)
	}
	return string(out)
}

func TestOperatorsDisableServersAndItems(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 3)
	p1, p2, p3 := c.peers[0], c.peers[1], c.peers[2]
	mustDo(t, p1, "POST", "/api/v1/jobs", job("ops", "* * * * * ?", 6, recv.URL), http.StatusCreated, nil)
	waitSpread(t, recv, "ops", 6, time.Time{}, map[string][]int{
		p1.InstanceID(): {0, 1}, p2.InstanceID(): {2, 3}, p3.InstanceID(): {4, 5}})

	// the API disables server 127.0.0.2 for this job: its items move to the others
	mustDo(t, p1, "POST", "/api/v1/jobs/ops/servers/127.0.0.2/disable", nil, http.StatusNoContent, nil)
	at := time.Now()
	waitSpread(t, recv, "ops", 6, at, map[string][]int{p1.InstanceID(): {0, 1, 2}, p3.InstanceID(): {3, 4, 5}})

	// an item disabled through the API is not run
	mustDo(t, p1, "POST", "/api/v1/jobs/ops/sharding/1/disable", nil, http.StatusNoContent, nil)
	at = time.Now()
	waitSpread(t, recv, "ops", 5, at, map[string][]int{p1.InstanceID(): {0, 2}, p3.InstanceID(): {3, 4, 5}})
	var items struct {
		Items []struct {
			Item   int    `json:"item"`
			Status string `json:"status"`
		} `json:"items"`
	}
	mustDo(t, p2, "GET", "/api/v1/jobs/ops/sharding", nil, http.StatusOK, &items)
	if items.Items[1].Status != "DISABLED" {
		t.Fatalf("item 1 status %s", items.Items[1].Status)
	}

	// the same by hand in ZooKeeper, as ElasticJob operators do: enable 127.0.0.2, disable 127.0.0.3,
	// enable item 1 and disable item 4
	base := "/" + c.ns + "/ops"
	zkCli(t, c.zk, "set", base+"/servers/127.0.0.2", "ENABLED")
	zkCli(t, c.zk, "set", base+"/servers/127.0.0.3", "DISABLED")
	zkCli(t, c.zk, "delete", base+"/sharding/1/disabled")
	zkCli(t, c.zk, "create", base+"/sharding/4/disabled", "")
	at = time.Now()
	waitSpread(t, recv, "ops", 5, at, map[string][]int{p1.InstanceID(): {0, 1, 2}, p2.InstanceID(): {3, 5}})

	// a server disabled for every job through the API
	var change struct {
		Jobs int `json:"jobs"`
	}
	mustDo(t, p3, "POST", "/api/v1/servers/127.0.0.1/disable", nil, http.StatusOK, &change)
	if change.Jobs != 1 {
		t.Fatalf("server disable touched %d jobs", change.Jobs)
	}
	at = time.Now()
	waitSpread(t, recv, "ops", 5, at, map[string][]int{p2.InstanceID(): {0, 1, 2, 3, 5}})
	var servers struct {
		Items []struct {
			IP           string   `json:"ip"`
			DisabledJobs []string `json:"disabledJobs"`
		} `json:"items"`
	}
	mustDo(t, p3, "GET", "/api/v1/servers", nil, http.StatusOK, &servers)
	if len(servers.Items) != 3 || servers.Items[0].IP != "127.0.0.1" || !slices.Equal(servers.Items[0].DisabledJobs, []string{"ops"}) {
		t.Fatalf("servers %+v", servers.Items)
	}
	noDoubleDelivery(t, recv)
}

func TestOperatorRemovesAnInstanceNode(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 2)
	p1, p2 := c.peers[0], c.peers[1]
	mustDo(t, p1, "POST", "/api/v1/jobs", job("rm", "* * * * * ?", 2, recv.URL), http.StatusCreated, nil)
	waitSpread(t, recv, "rm", 2, time.Time{}, map[string][]int{p1.InstanceID(): {0}, p2.InstanceID(): {1}})
	// deleting peer 2's instance node by hand takes it off the job until it is enabled again
	zkCli(t, c.zk, "delete", "/"+c.ns+"/rm/instances/"+p2.InstanceID())
	at := time.Now()
	waitSpread(t, recv, "rm", 2, at, map[string][]int{p1.InstanceID(): {0, 1}})
	// enabling its server through peer 2's API re-registers it
	mustDo(t, p2, "POST", "/api/v1/jobs/rm/servers/127.0.0.2/enable", nil, http.StatusNoContent, nil)
	at = time.Now()
	waitSpread(t, recv, "rm", 2, at, map[string][]int{p1.InstanceID(): {0}, p2.InstanceID(): {1}})
	noDoubleDelivery(t, recv)
}
