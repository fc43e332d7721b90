package integration

import (
	"bufio"
	"bytes"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
)

// counterSum sums a counter's series (every label set) on a peer's /metrics.
func counterSum(t *testing.T, p *harness.Peer, name string) float64 {
	t.Helper()
	raw := mustDo(t, p, "GET", "/metrics", nil, http.StatusOK, nil)
	sum := 0.0
	sc := bufio.NewScanner(bytes.NewReader(raw))
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if line == name || strings.HasPrefix(line, name+" ") || strings.HasPrefix(line, name+"{") {
			v, err := strconv.ParseFloat(line[strings.LastIndexByte(line, ' ')+1:], 64)
			if err == nil {
				sum += v
			}
		}
	}
	return sum
}

// A job created through the API is sharded in its creating transaction over the live peers (issue 21): it
// fires on every peer with the strategy's assignment without a resharding, its registry holds ElasticJob's
// sharding/{i}/instance and no leader/sharding/necessary, and a peer joining later still gets its items.
func TestNewJobIsShardedAtCreation(t *testing.T) {
	t.Parallel()
	recv := newReceiver(t)
	c := newCluster(t, 3)
	p1, p2, p3 := c.peers[0], c.peers[1], c.peers[2]
	mustDo(t, p2, "POST", "/api/v1/jobs", job("born", "* * * * * ?", 6, recv.URL), http.StatusCreated, nil)
	first := waitSpread(t, recv, "born", 6, time.Time{}, map[string][]int{
		p1.InstanceID(): {0, 1}, p2.InstanceID(): {2, 3}, p3.InstanceID(): {4, 5}})
	// two more complete fires: the leader has been elected and has looked at the sharding long before
	waitSpread(t, recv, "born", 6, first.Add(1500*time.Millisecond), map[string][]int{
		p1.InstanceID(): {0, 1}, p2.InstanceID(): {2, 3}, p3.InstanceID(): {4, 5}})
	var v struct {
		Leader string `json:"leader"`
	}
	if !eventually(20*time.Second, func() bool {
		mustDo(t, p1, "GET", "/api/v1/jobs/born", nil, http.StatusOK, &v)
		return v.Leader != ""
	}) {
		t.Fatal("no leader elected")
	}
	for _, p := range c.peers {
		if n := counterSum(t, p, "ejserver_reshardings_total"); n != 0 {
			t.Fatalf("%s resharded %v times a job sharded at its creation", p.InstanceID(), n)
		}
	}
	dump := string(mustDo(t, p1, "GET", "/api/v1/jobs/born/dump", nil, http.StatusOK, nil))
	if strings.Contains(dump, "/leader/sharding/necessary") || !strings.Contains(dump, "/sharding/5/instance") {
		t.Fatalf("registry of a job sharded at its creation:\n%s", dump)
	}
	// a fourth peer joins: the leader reshards and it gets items, as before
	p4 := c.add()
	joined := time.Now()
	_, ok := recv.WaitFor(40*time.Second, func(ds []harness.Delivery) bool {
		for _, d := range filter(ds, "born") {
			if d.Payload.InstanceID == p4.InstanceID() && d.Payload.ScheduledAt.After(joined) {
				return true
			}
		}
		return false
	})
	if !ok {
		t.Fatal("the peer that joined never fired an item")
	}
	noDoubleDelivery(t, recv)
}
