package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/ejserver/ejserver/internal/cluster"
	"github.com/ejserver/ejserver/internal/workflow/engine"
)

// Fault points for the integration tests, armed by environment variables that only tests set.

// envKillAt names a fault point, "STAGE" or "STAGE:NAME": one of the workflow engine's (engine.FaultStages:
// inbox-read, run-ending, step-written, fired, run-started; NAME: the point must concern that node), where the
// peer holding the engine duty kills itself, or "trigger-read" (NAME: the job), where a peer kills itself right
// after reading a trigger node of its own, before it runs it. The kill is a SIGKILL, as kill -9 does, before
// the peer does anything more.
const envKillAt = "EJ_TEST_KILL_AT"

// stageTriggerRead is envKillAt's fault point in the executor: a trigger read, not yet run.
const stageTriggerRead = "trigger-read"

// envKillOnce, with envKillAt, names a file: only the peer that creates it kills itself, so that the next
// duty holder, passing the same point again (it reads the same inbox message), carries on.
const envKillOnce = "EJ_TEST_KILL_ONCE"

// faultHooks are envKillAt's hooks: nil when it is not set or names the other's point.
type faultHooks struct {
	engine      func(engine.FaultPoint)
	triggerRead func(job string, req cluster.TriggerRequest)
}

// killAt returns envKillAt's hooks; an unknown stage is an error, so that a test does not pass for want of its
// fault.
func killAt(log *slog.Logger) (faultHooks, error) {
	spec := os.Getenv(envKillAt)
	if spec == "" {
		return faultHooks{}, nil
	}
	stage, name, _ := strings.Cut(spec, ":")
	if stage != stageTriggerRead && !slices.Contains(engine.FaultStages, engine.FaultStage(stage)) {
		return faultHooks{}, fmt.Errorf("%s=%q: the stage is none of %v or %s", envKillAt, spec, engine.FaultStages, stageTriggerRead)
	}
	once := os.Getenv(envKillOnce)
	log.Warn("test fault point armed: this peer kills itself at a fault point", "stage", stage, "name", name, "once", once)
	kill := func(args ...any) {
		if once != "" {
			f, err := os.OpenFile(once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if errors.Is(err, os.ErrExist) {
				return // another peer died here already
			}
			if err == nil {
				_ = f.Close()
			}
		}
		log.Warn("test fault point: killing this peer", append([]any{"stage", stage}, args...)...)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not caught: nothing after the fault point runs here
	}
	if stage == stageTriggerRead {
		return faultHooks{triggerRead: func(job string, req cluster.TriggerRequest) {
			if name == "" || job == name {
				kill("job", job, "trigger", req.ID)
			}
		}}, nil
	}
	return faultHooks{engine: func(p engine.FaultPoint) {
		if string(p.Stage) != stage || (name != "" && !slices.Contains(p.Nodes, name)) {
			return
		}
		kill("workflow", p.Run.Workflow, "run", p.Run.ID, "nodes", p.Nodes)
	}}, nil
}
