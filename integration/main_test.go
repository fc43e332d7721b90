// Package integration tests ejserver across real processes: real ZooKeeper (standalone and a 3-node
// ensemble), the real ejserver binary (several peers), and real HTTP receivers.
package integration

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver/integration/harness"
	"github.com/ejserver/ejserver/internal/testutil/pgtest"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

var binary string

func TestMain(m *testing.M) {
	code, err := run(m)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		code = 1
	}
	os.Exit(code)
}

func run(m *testing.M) (int, error) {
	dir, err := os.MkdirTemp("", "ejit-")
	if err != nil {
		return 1, err
	}
	defer os.RemoveAll(dir)
	binary, err = harness.Build(dir, os.Getenv("EJ_RACE") == "1")
	if err != nil {
		return 1, err
	}
	if _, err := zktest.Shared(); err != nil {
		return 1, err
	}
	defer zktest.StopShared()
	return m.Run(), nil
}

// testCluster is n peers on one namespace of the shared ZooKeeper.
type testCluster struct {
	t     testing.TB
	ns    string
	zk    string
	peers []*harness.Peer
	dir   string
}

type clusterOpt func(*harness.PeerConfig)

func withArgs(args ...string) clusterOpt {
	return func(c *harness.PeerConfig) { c.ExtraArgs = append(c.ExtraArgs, args...) }
}

func withSessionTimeout(d time.Duration) clusterOpt {
	return func(c *harness.PeerConfig) { c.SessionTimeout = d }
}

func withZK(addr string) clusterOpt {
	return func(c *harness.PeerConfig) { c.ZK = addr }
}

// newCluster starts n peers with server IPs 127.0.0.1, 127.0.0.2, ...
func newCluster(t testing.TB, n int, opts ...clusterOpt) *testCluster {
	t.Helper()
	name := strings.Map(func(r rune) rune {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			return r
		}
		return '-'
	}, strings.ToLower(t.Name()))
	if len(name) > 40 {
		name = name[:20] + name[len(name)-20:] // the namespace is at most 64 characters
	}
	c := &testCluster{t: t, ns: zktest.Namespace(name), zk: zktest.Addr(t), dir: t.TempDir()}
	t.Cleanup(c.stopAll)
	for range n {
		c.add(opts...)
	}
	return c
}

// add starts one more peer.
func (c *testCluster) add(opts ...clusterOpt) *harness.Peer {
	c.t.Helper()
	i := len(c.peers) + 1
	cfg := harness.PeerConfig{Binary: binary, ZK: c.zk, Namespace: c.ns, ServerIP: fmt.Sprintf("127.0.0.%d", i),
		DataDir: filepath.Join(c.dir, fmt.Sprintf("peer%d", i))}
	for _, o := range opts {
		o(&cfg)
	}
	p, err := harness.StartPeer(cfg)
	if err != nil {
		c.t.Fatalf("start peer %d: %v", i, err)
	}
	c.peers = append(c.peers, p)
	return p
}

func (c *testCluster) stopAll() {
	for _, p := range c.peers {
		_ = p.Stop(15 * time.Second)
	}
	if c.t.Failed() {
		for i, p := range c.peers {
			log := quietReads(p.Log())
			if len(log) > 20000 {
				log = "..." + log[len(log)-20000:]
			}
			c.t.Logf("---- log of peer %d (%s) ----\n%s", i+1, p.Config.ServerIP, log)
		}
	}
}

// quietReads drops the log lines of successful API reads, which tests that poll write by the thousand and
// which would push the lines that explain a failure out of the excerpt a failed test prints. A message that
// repeats (a fire skipped every second for minutes) keeps its first lines and its last one, and is counted.
func quietReads(log string) string {
	const keep = 6
	var b strings.Builder
	dropped := 0
	seen := map[string]int{}
	last := map[string]string{}
	var order []string
	for line := range strings.Lines(log) {
		if strings.Contains(line, `msg="api request"`) && strings.Contains(line, " method=GET ") && strings.Contains(line, " status=200 ") {
			dropped++
			continue
		}
		msg := logMsg(line)
		if msg != "" {
			seen[msg]++
			if seen[msg] > keep {
				if seen[msg] == keep+1 {
					order = append(order, msg)
				}
				last[msg] = line
				continue
			}
		}
		b.WriteString(line)
	}
	for _, msg := range order {
		fmt.Fprintf(&b, "(%d more lines of %s left out; the last:)\n%s", seen[msg]-keep-1, msg, last[msg])
	}
	if dropped > 0 {
		fmt.Fprintf(&b, "(%d log lines of successful API reads left out)\n", dropped)
	}
	return b.String()
}

// logMsg is a log line's msg="..." field, "" when it has none.
func logMsg(line string) string {
	_, rest, ok := strings.Cut(line, ` msg="`)
	if !ok {
		return ""
	}
	msg, _, ok := strings.Cut(rest, `"`)
	if !ok {
		return ""
	}
	return `msg="` + msg + `"`
}

func newReceiver(t testing.TB) *harness.Receiver {
	t.Helper()
	r, err := harness.NewReceiver()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// mustDo calls the API and fails the test on a transport error or an unexpected status.
func mustDo(t testing.TB, p *harness.Peer, method, path string, body any, wantStatus int, out any, headers ...string) []byte {
	t.Helper()
	status, raw, err := p.Do(method, path, body, out, headers...)
	if err != nil {
		t.Fatalf("%s %s: %v", method, path, err)
	}
	if status != wantStatus {
		t.Fatalf("%s %s: status %d, want %d: %s", method, path, status, wantStatus, raw)
	}
	return raw
}

func job(name, cron string, total int, url string) map[string]any {
	return map[string]any{"jobName": name, "cron": cron, "shardingTotalCount": total, "webhook": map[string]any{"url": url}}
}

// newPostgres starts a PostgreSQL server for the test (stopped at its end) and returns it with the DSN of a
// new database db on it.
func newPostgres(t testing.TB, db string) (*pgtest.Cluster, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	pg, err := pgtest.Start(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = pg.Close() })
	dsn, err := pg.CreateDatabase(ctx, db)
	if err != nil {
		t.Fatal(err)
	}
	return pg, dsn
}
