package service

import (
	"context"
	"errors"
	"io"
	"log/slog"
	"slices"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
)

// memRegistry keeps job configs in memory; the rest of the registry is not needed by these tests.
type memRegistry struct {
	Registry // nil: any other method panics, which would show an untested dependency
	jobs     map[string]ejserver.JobConfig
	versions map[string]int32
}

func newMemRegistry() *memRegistry {
	return &memRegistry{jobs: map[string]ejserver.JobConfig{}, versions: map[string]int32{}}
}

func (m *memRegistry) CreateJobSharded(cfg ejserver.JobConfig, _ []string) (int32, error) {
	if _, ok := m.jobs[cfg.JobName]; ok {
		return 0, ejserver.Errorf(ejserver.ECONFLICT, "exists")
	}
	m.jobs[cfg.JobName] = cfg.Clone()
	return 0, nil
}

// LivePeers: not listed yet, so jobs are created to be sharded by their leader.
func (m *memRegistry) LivePeers() ([]cluster.Identity, bool) { return nil, false }

func (m *memRegistry) GetJob(job string) (ejserver.JobConfig, int32, error) {
	cfg, ok := m.jobs[job]
	if !ok {
		return cfg, 0, ejserver.Errorf(ejserver.ENOTFOUND, "no job")
	}
	return cfg.Clone(), m.versions[job], nil
}

func (m *memRegistry) ReplaceJob(cfg ejserver.JobConfig, version int32) (int32, error) {
	if version >= 0 && version != m.versions[cfg.JobName] {
		return 0, ejserver.Errorf(ejserver.EPRECONDITION, "stale")
	}
	m.jobs[cfg.JobName] = cfg.Clone()
	m.versions[cfg.JobName]++
	return m.versions[cfg.JobName], nil
}

func (m *memRegistry) Job(string) *cluster.JobSnapshot { return nil }

const (
	secretA = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	secretB = "whsec_bXlvdGhlcnNlY3JldGlzbG9uZ2Vub3VnaHRvbw=="
)

func newTestService(reg *memRegistry, clk clock.Clock) *Service {
	n := 0
	return New(Config{Registry: reg, Clock: clk, Logger: slog.New(slog.NewTextHandler(io.Discard, nil)),
		NewSecret: func() string { n++; return []string{secretA, secretB}[n%2] }})
}

func secretJob(secret *string, generate bool) ejserver.JobConfig {
	cfg := ejserver.DefaultJobConfig()
	cfg.JobName, cfg.ShardingTotalCount, cfg.Webhook.URL = "j", 1, "https://h.example/x"
	body := `{"url":"https://h.example/x"`
	if secret != nil {
		body += `,"secret":"` + *secret + `"`
	}
	if generate {
		body += `,"generateSecret":true`
	}
	if err := cfg.Webhook.UnmarshalJSON([]byte(body + "}")); err != nil {
		panic(err)
	}
	return cfg
}

func ptr(s string) *string { return &s }

func TestSecretRules(t *testing.T) {
	ctx := context.Background()
	reg := newMemRegistry()
	clk := clock.NewFake(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC))
	svc := newTestService(reg, clk)

	// generated at create, returned once
	_, gen, err := svc.CreateJob(ctx, secretJob(nil, true))
	if err != nil || gen == "" || reg.jobs["j"].Webhook.Secret != gen {
		t.Fatalf("create: %q %v", gen, err)
	}
	first := gen

	// an absent secret keeps the stored one
	if _, gen, err = svc.ReplaceJob(ctx, "j", secretJob(nil, false), nil, nil); err != nil || gen != "" {
		t.Fatal(gen, err)
	}
	if w := reg.jobs["j"].Webhook; w.Secret != first || w.PreviousSecret != "" {
		t.Fatalf("kept: %+v", w)
	}

	// generateSecret rotates: the old one keeps signing for the grace period
	if _, gen, err = svc.ReplaceJob(ctx, "j", secretJob(nil, true), nil, nil); err != nil || gen == "" || gen == first {
		t.Fatal(gen, err)
	}
	w := reg.jobs["j"].Webhook
	if w.Secret != gen || w.PreviousSecret != first || !w.PreviousSecretExpiresAt.Equal(clk.Now().Add(24*time.Hour)) {
		t.Fatalf("rotated: %+v", w)
	}
	if got := w.Secrets(clk.Now()); len(got) != 2 {
		t.Fatalf("during the grace period %d secrets sign", len(got))
	}
	if got := w.Secrets(clk.Now().Add(25 * time.Hour)); len(got) != 1 {
		t.Fatalf("after the grace period %d secrets sign", len(got))
	}

	// once the grace period is over, the next replace forgets the previous secret
	clk.Advance(25 * time.Hour)
	if _, _, err = svc.ReplaceJob(ctx, "j", secretJob(nil, false), nil, nil); err != nil {
		t.Fatal(err)
	}
	if w := reg.jobs["j"].Webhook; w.PreviousSecret != "" {
		t.Fatalf("expired previous secret kept: %+v", w)
	}

	// "" removes it
	if _, _, err = svc.ReplaceJob(ctx, "j", secretJob(ptr(""), false), nil, nil); err != nil {
		t.Fatal(err)
	}
	if w := reg.jobs["j"].Webhook; w.Secret != "" || w.PreviousSecret != "" {
		t.Fatalf("removed: %+v", w)
	}

	// a given secret and generateSecret together are refused, and nothing changes
	before := reg.versions["j"]
	_, _, err = svc.ReplaceJob(ctx, "j", secretJob(ptr(secretA), true), nil, nil)
	var de *ejserver.Error
	if !errors.As(err, &de) || de.Field() != "webhook.generateSecret" || reg.versions["j"] != before {
		t.Fatalf("both: %v", err)
	}
	// a malformed secret is refused
	_, _, err = svc.ReplaceJob(ctx, "j", secretJob(ptr("hunter2"), false), nil, nil)
	if !errors.As(err, &de) || de.Field() != "webhook.secret" {
		t.Fatalf("malformed: %v", err)
	}
	// a version the check refuses is refused before anything is written; the check sees the stored version
	var checked []int32
	_, _, err = svc.ReplaceJob(ctx, "j", secretJob(nil, false), func(v int32) bool { checked = append(checked, v); return false }, nil)
	if ejserver.ErrorCodeOf(err) != ejserver.EPRECONDITION || reg.versions["j"] != before || !slices.Equal(checked, []int32{before}) {
		t.Fatalf("stale: %v (checked %v)", err, checked)
	}
	// one it accepts is replaced
	if _, _, err = svc.ReplaceJob(ctx, "j", secretJob(nil, false), func(v int32) bool { return v == before }, nil); err != nil || reg.versions["j"] != before+1 {
		t.Fatalf("matching version: %v", err)
	}
}
