package calendarstore

import (
	"context"
	"io"
	"log/slog"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/calendar"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/testutil/zktest"
)

// TestMain starts the shared ZooKeeper and checks for leaked goroutines.
func TestMain(m *testing.M) { os.Exit(zktest.Main(m)) }

func registry(t *testing.T, ns string) *cluster.Registry {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	log := slog.New(slog.NewTextHandler(io.Discard, nil))
	s, err := cluster.Dial(ctx, cluster.SessionConfig{Servers: []string{zktest.Addr(t)}, SessionTimeout: 4 * time.Second, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(s.Close)
	reg, err := cluster.NewRegistry(s, cluster.RegistryConfig{Namespace: ns,
		Identity: cluster.Identity{InstanceID: "127.0.0.1@-@" + ns, ServerIP: "127.0.0.1"}, Logger: log})
	if err != nil {
		t.Fatal(err)
	}
	if err := reg.Start(ctx); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(reg.Stop)
	return reg
}

// TestStoreWatchesAndRefuses: two stores on two sessions of one namespace; a calendar written through one
// reaches the other's cache by its watch (created, edited, deleted), and a calendar in use is not deleted.
func TestStoreWatchesAndRefuses(t *testing.T) {
	ns := zktest.Namespace("calstore")
	used := []string{}
	a := New(Config{Registry: registry(t, ns), UsedBy: func(string) []string { return used }})
	b := New(Config{Registry: registry(t, ns)})
	ctx := context.Background()
	for _, s := range []*Store{a, b} {
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(s.Stop)
	}
	job := &ejserver.JobConfig{ExcludeCalendars: []string{"hol"}}
	xmas := time.Date(2026, 12, 25, 9, 0, 0, 0, time.UTC)
	decided := func(s *Store, want string) bool {
		tick := time.NewTicker(20 * time.Millisecond)
		defer tick.Stop()
		deadline := time.After(10 * time.Second)
		for {
			r, err := s.Rules(job)
			got := "error"
			if err == nil {
				got = r.Decide(xmas).Reason
			}
			if strings.HasPrefix(got, want) {
				return true
			}
			select {
			case <-deadline:
				return false
			case <-tick.C:
			}
		}
	}
	if !decided(b, "error") {
		t.Fatal("an unknown calendar is not an error")
	}
	if _, err := a.Create(ctx, calendar.Calendar{Name: "hol", Annual: []string{"12-25"}}); err != nil {
		t.Fatal(err)
	}
	if !decided(b, calendar.ReasonCalendar) {
		t.Fatal("the other store did not see the new calendar")
	}
	if _, err := a.Replace(ctx, "hol", calendar.Calendar{Annual: []string{"01-01"}}, nil); err != nil {
		t.Fatal(err)
	}
	if !decided(b, "") {
		t.Fatal("the other store did not see the edit")
	}
	used = []string{"nightly"}
	if err := a.Delete(ctx, "hol"); ejserver.ErrorCodeOf(err) != ejserver.ECONFLICT || !strings.Contains(err.Error(), "nightly") {
		t.Fatalf("delete of a calendar in use = %v", err)
	}
	used = nil
	if err := a.Delete(ctx, "hol"); err != nil {
		t.Fatal(err)
	}
	if !decided(b, "error") {
		t.Fatal("the other store did not see the deletion")
	}
	if _, err := a.Compile(ctx, "excludeCalendars", []string{"hol"}); ejserver.ErrorCodeOf(err) != ejserver.EINVALID {
		t.Fatalf("Compile of a deleted calendar = %v", err)
	}
}
