package main

import (
	"errors"
	"fmt"
	"log/slog"
	"os"
	"slices"
	"strings"
	"syscall"

	"github.com/ejserver/ejserver/internal/workflow/engine"
)

// Fault points for the integration tests, armed by environment variables that only tests set.

// envKillAt names a fault point of the workflow engine, "STAGE" or "STAGE:NODE" (engine.FaultStages:
// inbox-read, run-ending, step-written, fired, run-started; NODE: the point must concern that node): the peer
// holding the engine duty kills itself there (SIGKILL, as kill -9 does), before it does anything more.
const envKillAt = "EJ_TEST_KILL_AT"

// envKillOnce, with envKillAt, names a file: only the peer that creates it kills itself, so that the next
// duty holder, passing the same point again (it reads the same inbox message), carries on.
const envKillOnce = "EJ_TEST_KILL_ONCE"

// killAt returns the engine's Fault hook for envKillAt, or nil when it is not set; an unknown stage is an
// error, so that a test does not pass for want of its fault.
func killAt(log *slog.Logger) (func(engine.FaultPoint), error) {
	spec := os.Getenv(envKillAt)
	if spec == "" {
		return nil, nil
	}
	stage, node, _ := strings.Cut(spec, ":")
	if !slices.Contains(engine.FaultStages, engine.FaultStage(stage)) {
		return nil, fmt.Errorf("%s=%q: the stage is none of %v", envKillAt, spec, engine.FaultStages)
	}
	once := os.Getenv(envKillOnce)
	log.Warn("test fault point armed: this peer kills itself at a workflow engine stage", "stage", stage, "node", node, "once", once)
	return func(p engine.FaultPoint) {
		if string(p.Stage) != stage || (node != "" && !slices.Contains(p.Nodes, node)) {
			return
		}
		if once != "" {
			f, err := os.OpenFile(once, os.O_CREATE|os.O_EXCL|os.O_WRONLY, 0o600)
			if errors.Is(err, os.ErrExist) {
				return // another peer died here already
			}
			if err == nil {
				_ = f.Close()
			}
		}
		log.Warn("test fault point: killing this peer at a workflow engine stage", "stage", stage, "workflow", p.Run.Workflow,
			"run", p.Run.ID, "nodes", p.Nodes)
		_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
		select {} // SIGKILL is not caught: nothing after the fault point runs here
	}, nil
}
