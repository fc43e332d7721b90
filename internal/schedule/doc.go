// Package schedule holds the pure decisions of issue 24's per-job schedule options: what a fire does when the
// previous fire's item still runs (overlap policy), which missed fires run after an outage (catch-up), how
// long a fire waits for its job's sharding, and the deterministic jitter of a fire. Everything here is a function of values: no clock, no ZooKeeper.
package schedule
