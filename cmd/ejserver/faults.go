package main

import (
	"log/slog"
	"os"
	"slices"
	"syscall"

	"github.com/ejserver/ejserver/internal/workflow"
)

// Fault points for the integration tests, armed by environment variables that only tests set.

// envKillAfterFiring names a workflow node: the peer holding the engine duty kills itself (SIGKILL, as kill
// -9 does) right after it wrote the run step that fires that node, before its own instance could take its
// trigger or any item was sent.
const envKillAfterFiring = "EJ_TEST_KILL_AFTER_FIRING"

// killAfterFiring returns the engine's Stepped hook for envKillAfterFiring, or nil when it is not set.
func killAfterFiring(log *slog.Logger) func(workflow.Run, []string) {
	node := os.Getenv(envKillAfterFiring)
	if node == "" {
		return nil
	}
	log.Warn("test fault point armed: this peer kills itself after firing a workflow node", "node", node)
	return func(r workflow.Run, fired []string) {
		if slices.Contains(fired, node) {
			log.Warn("test fault point: killing this peer after firing a workflow node", "workflow", r.Workflow, "run", r.ID, "node", node)
			_ = syscall.Kill(os.Getpid(), syscall.SIGKILL)
			select {} // SIGKILL is not caught: nothing after the step runs here
		}
	}
}
