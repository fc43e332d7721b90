package api

import (
	"context"

	"github.com/ejserver/ejserver"
	"github.com/ejserver/ejserver/internal/backfill"
)

// fakeBackfills answers the backfill routes for the access tests: the routes' own behaviour is tested
// against real peers in integration (TestBackfill*).
type fakeBackfills struct{}

func (fakeBackfills) Start(job string, _ backfill.Request, by string) (backfill.Backfill, error) {
	return backfill.Backfill{ID: "b1", Job: job, CreatedBy: by, State: backfill.StateRunning}, nil
}

func (fakeBackfills) List(string) ([]backfill.Backfill, error) { return nil, nil }

func (fakeBackfills) Get(job, id string) (backfill.Backfill, error) {
	if id != "b1" {
		return backfill.Backfill{}, ejserver.Errorf(ejserver.ENOTFOUND, "no backfill %q", id)
	}
	return backfill.Backfill{ID: id, Job: job}, nil
}

func (fakeBackfills) Cancel(job, id, by string) (backfill.Backfill, error) {
	return backfill.Backfill{ID: id, Job: job, CancelledBy: by, State: backfill.StateCancelled}, nil
}

// fakeReplays answers the replay route for the access tests (TestReplay* in integration runs it for real).
type fakeReplays struct{}

func (fakeReplays) Original(_ context.Context, id string) (ejserver.Execution, error) {
	return ejserver.Execution{ID: id, JobName: "team-a-1"}, nil
}

func (fakeReplays) Replay(orig ejserver.Execution, _ string) (ejserver.Execution, error) {
	return ejserver.Execution{ID: "new", JobName: orig.JobName, ReplayOf: orig.ID}, nil
}
