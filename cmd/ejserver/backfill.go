package main

import (
	"fmt"
	"log/slog"
	"time"

	"github.com/ejserver/ejserver/internal/backfill"
	"github.com/ejserver/ejserver/internal/clock"
	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/dispatch"
)

// newBackfills wires the backfill API's service and this peer's runner of the namespace's backfills. The
// runner's requests wait while this peer's executor sends scheduled fires (the Activity), as the history
// writer's batches do.
func newBackfills(reg *cluster.Registry, sender backfill.Sender, rec backfill.Recorder, activity *dispatch.Activity,
	pacing backfill.Pacing, clk clock.Clock, log *slog.Logger) (*backfill.Service, *backfill.Runner) {
	svc := backfill.NewService(reg, nil, clk, log)
	runner := backfill.NewRunner(backfill.RunnerConfig{Store: reg, Sender: sender, Recorder: rec, Pacing: pacing,
		Busy: func() (d time.Duration) { return activity.Busy(historyYieldGuard) }, Clock: clk, Logger: log})
	return svc, runner
}

var (
	_ backfill.Store    = (*cluster.Registry)(nil)
	_ backfill.Registry = (*cluster.Registry)(nil)
)

// backfillFlags adds the backfill pacing flags; the returned function reads them after parsing.
func backfillFlags(f *envFlags) func() (backfill.Pacing, error) {
	inFlight := f.Int("backfill-in-flight", 4, "bound on one backfill's webhook requests in flight at once")
	rate := f.Int("backfill-rate", 50, "bound on the fires one backfill starts per second")
	return func() (backfill.Pacing, error) {
		switch {
		case *inFlight < 1 || *inFlight > 256:
			return backfill.Pacing{}, fmt.Errorf("--backfill-in-flight: must be between 1 and 256, got %d", *inFlight)
		case *rate < 1 || *rate > 10000:
			return backfill.Pacing{}, fmt.Errorf("--backfill-rate: must be between 1 and 10000, got %d", *rate)
		}
		return backfill.Pacing{MaxInFlight: *inFlight, Rate: float64(*rate)}, nil
	}
}
