package service

import (
	"context"
	"testing"
	"time"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/clock"
)

// withLabelledJob is a service over a memory registry holding job "j", labelled payments.
func withLabelledJob(t *testing.T) (*memRegistry, *Service) {
	t.Helper()
	reg := newMemRegistry()
	svc := newTestService(reg, clock.NewFake(time.Date(2026, 11, 21, 10, 0, 0, 0, time.UTC)))
	cfg := secretJob(nil, false)
	cfg.Label = "payments"
	if _, _, err := svc.CreateJob(context.Background(), cfg); err != nil {
		t.Fatal(err)
	}
	return reg, svc
}

// A replace's guard sees the stored config, and its error stops the write.
func TestReplaceGuard(t *testing.T) {
	ctx := context.Background()
	reg, svc := withLabelledJob(t)
	before := reg.versions["j"]
	var seen string
	refuse := func(cur ejserver.JobConfig) error {
		seen = cur.Label
		return ejserver.Errorf(ejserver.ENOTFOUND, "job %q not found", cur.JobName)
	}
	next := secretJob(nil, false)
	next.Label = "other"
	if _, _, err := svc.ReplaceJob(ctx, "j", next, nil, refuse); !ejserver.IsNotFound(err) || seen != "payments" {
		t.Fatalf("guard: err %v, saw label %q", err, seen)
	}
	if reg.versions["j"] != before || reg.jobs["j"].Label != "payments" {
		t.Fatal("a refused replace wrote")
	}
	if _, _, err := svc.ReplaceJob(ctx, "j", next, nil, func(ejserver.JobConfig) error { return nil }); err != nil || reg.jobs["j"].Label != "other" {
		t.Fatalf("an accepting guard: %v", err)
	}
}

// JobLabel falls back to the registry for a job the cache doesn't hold yet (memRegistry's cache is empty).
func TestJobLabel(t *testing.T) {
	ctx := context.Background()
	_, svc := withLabelledJob(t)
	if l, err := svc.JobLabel(ctx, "j"); err != nil || l != "payments" {
		t.Fatalf("label %q, %v", l, err)
	}
	for _, name := range []string{"missing", "../j", ""} {
		if _, err := svc.JobLabel(ctx, name); !ejserver.IsNotFound(err) {
			t.Fatalf("%q: %v, want not found", name, err)
		}
	}
}
