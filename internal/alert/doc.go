// Package alert decides when a job's trouble is told and what is said: rules as pure functions of events
// (Decide, Flush), and the cluster edges that feed them (the fire ledger that sees a fire end on every
// peer, the fences that make one peer send each notification, the once-per-fire hooks).
//
// The core (engine.go, policy.go, text.go) takes values and returns values: an Event and the job's State in,
// the next State and the notifications out. It knows nothing of ZooKeeper or HTTP.
//
//	event ──► Decide(policy, state, event, now) ──► state', [notification → channels]
//	                  │ quiet period running: fold into the rule's pending digest
//	tick  ──► Flush(policy, state, now) ──► digests whose quiet period ended
//
// An incident opens when a rule sends (or folds) a failure kind (Opens) and closes with one RECOVERED (same
// DedupKey) when a later fire of the job ends with every item succeeded.
package alert
