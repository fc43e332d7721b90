package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ejserver/ejserver/internal/backfill"
	"github.com/ejserver/ejserver/internal/calendarstore"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
)

// newBackfills wires the backfill API's service and this peer's runner of the namespace's backfills. The
// runner's requests yield while this peer's executor sends scheduled fires (the Activity), as the history
// writer's batches do, each fire --backfill-max-hold in all at most.
func newBackfills(reg *cluster.Registry, cals *calendarstore.Store, sender backfill.Sender, rec backfill.Recorder,
	activity *dispatch.Activity, pacing backfill.Pacing, retention time.Duration, clk clock.Clock, log *slog.Logger) (*backfill.Service, *backfill.Runner) {
	allow := backfillAllow(reg, cals)
	svc := backfill.NewService(reg, allow, clk, log)
	runner := backfill.NewRunner(backfill.RunnerConfig{Store: reg, Sender: sender, Recorder: rec, Pacing: pacing,
		Busy: activity.Busy, Allow: allow, Retention: retention, Clock: clk, Logger: log})
	return svc, runner
}

// backfillAllow narrows a backfill to the fires the job's schedule really had: its calendars' days and
// endAt (not its pause: a backfill is an operator's own request). A job naming a calendar this peer does not
// hold runs no backfill fire rather than one on a day the job may exclude.
func backfillAllow(reg *cluster.Registry, cals *calendarstore.Store) func(job string) func(time.Time) bool {
	return func(job string) func(time.Time) bool {
		snap := reg.Job(job)
		if snap == nil {
			return nil
		}
		rules, err := cals.Rules(snap.Config)
		if err != nil {
			return func(time.Time) bool { return false }
		}
		return rules.Fires
	}
}

var (
	_ backfill.Store    = (*cluster.Registry)(nil)
	_ backfill.Registry = (*cluster.Registry)(nil)
)

// backfillFlags adds the backfill pacing flags; the returned function reads them after parsing.
func backfillFlags(f *envFlags) func() (backfill.Pacing, time.Duration, error) {
	inFlight := f.Int("backfill-in-flight", backfill.DefaultMaxInFlight, "bound on one backfill's webhook requests in flight at once")
	rate := f.Int("backfill-rate", backfill.DefaultRate, "bound on the fires one backfill starts per second")
	hold := f.Duration("backfill-max-hold", backfill.DefaultMaxHold, "the most one backfill fire yields to this peer's scheduled sends in all; then it goes though the peer is busy (the backfill's minimum progress)")
	guard := f.Duration("backfill-guard", backfill.DefaultGuard, "how far before a scheduled burst of this peer's webhooks (its lead window) and after it a backfill request does not leave")
	pending := f.Int("backfill-pending", backfill.DefaultMaxPending, "bound on one backfill's fires sent and not yet recorded done while their history records commit")
	retention := f.Duration("backfill-retention", backfill.DefaultRetention, "how long an ended backfill's progress stays in ZooKeeper (the API and console show it) before it is pruned; a deleted job's backfills go at once")
	return func() (backfill.Pacing, time.Duration, error) {
		switch {
		case *inFlight < 1 || *inFlight > 256:
			return backfill.Pacing{}, 0, fmt.Errorf("--backfill-in-flight: must be between 1 and 256, got %d", *inFlight)
		case *rate < 1 || *rate > 10000:
			return backfill.Pacing{}, 0, fmt.Errorf("--backfill-rate: must be between 1 and 10000, got %d", *rate)
		case *hold < 10*time.Millisecond || *hold > time.Minute:
			return backfill.Pacing{}, 0, fmt.Errorf("--backfill-max-hold: must be between 10ms and 1m, got %s", *hold)
		case *guard < 10*time.Millisecond || *guard > 5*time.Second:
			return backfill.Pacing{}, 0, fmt.Errorf("--backfill-guard: must be between 10ms and 5s, got %s", *guard)
		case *pending < 1 || *pending > 64:
			return backfill.Pacing{}, 0, fmt.Errorf("--backfill-pending: must be between 1 and 64, got %d", *pending)
		case *retention < time.Minute || *retention > 365*24*time.Hour:
			return backfill.Pacing{}, 0, fmt.Errorf("--backfill-retention: must be between 1m and 8760h, got %s", *retention)
		}
		return backfill.Pacing{MaxInFlight: *inFlight, Rate: float64(*rate), MaxHold: *hold, MaxPending: *pending, Guard: *guard}, *retention, nil
	}
}
