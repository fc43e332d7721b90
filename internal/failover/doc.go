// Package failover re-runs the items a crashed peer left unfinished, keeping their execution id so the
// receiver can dedupe (failover=true jobs, which record running items persistently).
//
//	peer X dies ──▶ its session expires ──▶ instances/X and leader nodes vanish
//	                                             │
//	              the job's leader (re-elected if X led) scans sharding/{i}/running:
//	              every item whose running node names X ──▶ leader/failover/items/{i}
//	                                             │
//	   any surviving peer (watching leader/failover/items) claims one item at a time, atomically:
//	   delete failover/items/{i} + create sharding/{i}/failover (ephemeral) + failovering + rewrite running
//	                                             │
//	   re-POST with source FAILOVER and the interrupted executionId ──▶ on success: running, failover and
//	   failovering are deleted with the outcome
//
// Items that were not running are not re-run: they move to a live peer at the next resharding. A claimer
// that dies mid-run leaves running naming itself: the leader queues the item again. Switching failover off
// clears pending failover state. Unlike ElasticJob, a claimer need not be idle: an HTTP item costs a peer
// only a request slot, so the orphans are re-POSTed as soon as any survivor sees them.
package failover
