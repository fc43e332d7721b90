package notify

import (
	"context"
	"io"
	"log/slog"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

func newRegistry(t *testing.T, ns, digest string) *cluster.Registry {
	return startRegistry(t, ns, digest, true)
}

// startRegistry dials a session (with digest, if set) and makes a registry, started if start.
func startRegistry(t *testing.T, ns, digest string, start bool) *cluster.Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second,
		Digest: digest, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
		Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + ns + digest, ServerIP: "127.0.0.1"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if !start {
		return reg
	}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	return reg
}

func newStore(t *testing.T, reg *cluster.Registry) *Store { return newStoreWith(t, reg, nil) }

func newStoreWith(t *testing.T, reg *cluster.Registry, gone func(string)) *Store {
	t.Helper()
	s := NewStore(StoreConfig{Registry: reg, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)), OnRemoved: gone})
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if err := s.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Stop)
	return s
}

// eventually polls cond until it holds or 10 s pass.
func eventually(t *testing.T, what string, cond func() bool) {
	t.Helper()
	testutil.Eventually(t, what, 10*time.Second, cond)
}

// TestStoreAcrossPeers: channels written through one peer's store reach the other peer's watched cache
// (create, replace, delete), versions guard replaces, and one default per kind is kept.
func TestStoreAcrossPeers(t *testing.T) {
	ns := zktest.Namespace("channels")
	removed := make(chan string, 10)
	a, b := newStore(t, newRegistry(t, ns, "")), newStoreWith(t, newRegistry(t, ns, ""), func(n string) { removed <- n })
	ctx := context.Background()
	st, err := a.Create(ctx, slackChannel("ops", "https://hooks.example.com/one"))
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other peer's cache has the channel", func() bool {
		c, ok := b.Lookup("ops")
		return ok && str(c.Slack.URL) == "https://hooks.example.com/one"
	})
	if _, err := b.Create(ctx, slackChannel("ops", "https://hooks.example.com/x")); ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT {
		t.Fatalf("second create: %v", err)
	}

	// a replace that leaves the URL out keeps it; a stale version is refused
	repl := Channel{Kind: ChannelSlack, Default: true, Slack: &SlackSettings{}}
	st2, err := b.Replace(ctx, "ops", repl, func(v int32) bool { return v == st.Version })
	if err != nil {
		t.Fatal(err)
	}
	if _, err := a.Replace(ctx, "ops", repl, func(v int32) bool { return v == st.Version }); ejserver.ErrorCodeOf(err) != ejserver.EPRECONDITION {
		t.Fatalf("stale replace: %v", err)
	}
	eventually(t, "the first peer's cache has the default", func() bool {
		c, ok := a.Default(ChannelSlack)
		return ok && c.Name == "ops" && str(c.Slack.URL) == "https://hooks.example.com/one"
	})
	if got, _ := b.Get(ctx, "ops"); got.Version != st2.Version || got.Description != "" {
		t.Fatalf("get %+v", got)
	}
	second := slackChannel("ops2", "https://hooks.example.com/two")
	second.Default = true
	if _, err := a.Create(ctx, second); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
		t.Fatalf("a second default slack channel: %v", err)
	}
	if _, err := a.Replace(ctx, "ops", Channel{Name: "other", Kind: ChannelSlack, Slack: &SlackSettings{}}, nil); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
		t.Fatalf("rename: %v", err)
	}

	if err := a.Delete(ctx, "ops"); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the other peer's cache drops the channel", func() bool { _, ok := b.Lookup("ops"); return !ok })
	if got := <-removed; got != "ops" {
		t.Fatalf("OnRemoved told %q", got)
	}
	if err := a.Delete(ctx, "ops"); ejserver.ErrorCodeOf(err) != ejserver.ENOTFOUND {
		t.Fatalf("second delete: %v", err)
	}
	if _, err := a.Get(ctx, "../x"); ejserver.ErrorCodeOf(err) != ejserver.ENOTFOUND {
		t.Fatalf("get of a bad name: %v", err)
	}
	if all, err := b.List(ctx); err != nil || len(all) != 0 {
		t.Fatalf("list %v %v", all, err)
	}
}

// TestChannelNodesAreClosedWithADigest: with --zk-digest, a session without it cannot read a channel node
// (it holds the channel's secrets), while the cluster's peers can.
func TestChannelNodesAreClosedWithADigest(t *testing.T) {
	ns := zktest.Namespace("chacl")
	s := newStore(t, newRegistry(t, ns, "ejserver:pw"))
	if _, err := s.Create(context.Background(), slackChannel("ops", "https://hooks.example.com/secret")); err != nil {
		t.Fatal(err)
	}
	if _, err := newRegistry(t, ns, "ejserver:pw").ReadChannel("ops"); err != nil {
		t.Fatalf("a peer with the digest: %v", err)
	}
	if _, err := startRegistry(t, ns, "", false).ReadChannel("ops"); err == nil { // a reader of the registry, not a peer
		t.Fatal("a session without the digest read the channel node")
	}
}
