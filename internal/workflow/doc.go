// Package workflow is the pure core of workflows: DAGs of nodes that each fire an existing job once per run,
// after their parents ended as their edges require.
//
// A Workflow is validated by Validate (cycles, unknown jobs, unreachable nodes, bad names: each a field
// error naming the offending node). A Run advances by Apply: an event in, the next run and its effects out.
// Apply decides; it does no I/O. The engine (engine.go) drives it: it persists each next run in ZooKeeper
// together with the triggers of the nodes it fires, in one fenced transaction, so that a peer that dies
// between two steps leaves either the old run (the next peer decides again, identically) or the new one with
// its fires (the next peer waits for their ends): no node is skipped or fired twice.
//
//	           Start                       every node ended
//	PENDING ----------> RUNNING ---------------------------------> SUCCEEDED | FAILED
//	   |                  |  ^                                                 |
//	   | overlap: skip    |  |  RetryFailed (the nodes not succeeded and      |
//	   v                  |  +-------- all below them back to PENDING) <-----+
//	SKIPPED               | Cancel
//	                      v
//	                  CANCELLED (running nodes' items are stopped; their fires' ends are ignored)
//
// A node: PENDING -> RUNNING (its job fired) -> SUCCEEDED | FAILED, or PENDING -> SKIPPED (its parents
// ended and an edge is not satisfied), or CANCELLED with its run.
package workflow
