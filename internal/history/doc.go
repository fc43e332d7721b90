// Package history records what every fire did: ElasticJob's two event-trace tables, JOB_EXECUTION_LOG (one
// row per item of a fire, written when the item starts and updated when it ends) and JOB_STATUS_TRACE_LOG
// (state changes of a task), with the columns HTTP adds (status code, attempts, duration, response excerpt,
// instance, scheduled time, sharding total, permanence) and what an item whose receiver answered 202 Accepted
// reports through its callbacks (state, progress, message, last heartbeat, lease expiry, output).
//
// An execution's records may reach the store out of order, through several peers: the upsert keeps the one
// furthest along (running records ordered by heartbeat, then end records by completion; see replaces).
//
// Two stores satisfy Store: an embedded SQLite file (modernc.org/sqlite, WAL, one writer connection) for a
// single peer, and PostgreSQL (pgx) so that every peer of a cluster writes to one database and any peer's
// API reads the whole cluster's history. Open picks one by the DSN's prefix and migrates the schema
// (schema_migrations; embedded SQL per dialect; serialised by pg_advisory_xact_lock or an immediate SQLite
// transaction, so peers may start together).
//
// Nothing on the fire path waits for the store. Dispatch hands records to a Writer, whose Enqueue never
// blocks:
//
//	dispatch --Enqueue--> [bounded queue] --batch every FlushInterval or BatchSize--> Store
//	                        | full: drop, count, log (rate-limited)
//	                        store down: keep the batch, health = degraded, retry with back-off;
//	                        the queue fills and then drops; writes resume when the store answers
//
// A Pruner deletes rows older than the retention in bounded batches, in the background.
//
// Times are stored in UTC with microsecond precision (SQLite: INTEGER microseconds since the Unix epoch;
// PostgreSQL: timestamptz). Record and query times are truncated to the microsecond the same way.
package history
