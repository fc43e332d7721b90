// Package lease is the life of a long-running item: one whose receiver answered 202 Accepted and reports
// its end through callbacks (docs/long-running.md). It is pure: Apply takes a lease and an event and
// returns the next lease and what must follow; the cluster package persists leases in ZooKeeper, the
// watcher drives their expiries, the API feeds the callbacks.
//
//	              202 Accepted
//	                   |
//	                   v        heartbeat (renews the lease)
//	  +----------> RUNNING <------------------+
//	  |             |  |  \                   |
//	  | re-POST     |  |   complete           |
//	  | accepted    |  |   (success/failure)  |
//	  |             |  |        |             |
//	  |  lease ran  |  |        v             |
//	  |  out, an    |  |   SUCCEEDED / FAILED |
//	  |  attempt    |  |                      |
//	  |  left       v  |  lease ran out,      |
//	  +------- RETRYING  no attempt left      |
//	             |     \----> EXPIRED         |
//	             |                            |
//	             +--- callback of the new ----+
//	                  attempt (it got there first)
//
//	job deleted: any state not ended -> CANCELLED
//
// A callback carries its token's iteration and attempt: one of an earlier request is refused as
// stale-attempt and changes nothing. The same completion repeated after the end is answered as applied;
// a different one is already-completed; anything after an expiry is lease-expired.
package lease
