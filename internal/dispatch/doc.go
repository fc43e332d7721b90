// Package dispatch fires jobs: the Scheduler is one timer loop over a heap of next fire times for every job,
// and the Executor turns a fire into item runs.
//
// One item of one fire on one peer:
//
//	fire ──▶ sharded? (leader reshards / others wait) ──▶ my items (owned, not disabled, not failed over)
//	  item still running here? ── yes ──▶ misfire: set sharding/{i}/misfire, one catch-up after it ends
//	        │ no                      (a manual trigger is queued instead and runs right after)
//	        ▼
//	BeginItem: one multi checks instances/{me} and the item's owner version and creates running
//	        │ fails: the item is no longer this peer's (or runs elsewhere): not POSTed
//	        ▼
//	POST the webhook (retries, timeouts, signing: internal/webhook) ──▶ EndItem: delete running,
//	write completed (and clear failover nodes) ──▶ history record, log line, metrics
//
// The fencing in BeginItem is what keeps two peers from POSTing one item of one fire: a peer whose
// session expired has no instance node, and a peer that lost the item sees its owner version change.
//
// A fire whose ZooKeeper session is in doubt when it is handed off, or when its prepared items are due,
// waits for the session (sessionwait.go, internal/sessiongate): a reconnect within the same session costs
// it lateness; an expiry since the fire began, or the deadline (its time plus the session timeout, never
// into the next fire), skips it.
package dispatch
