// Package metrics exposes ejserver's Prometheus metrics at /metrics.
//
// A Metrics has its own registry (never the global one) holding the series below, plus the Go runtime
// (go_*) and process (process_*) collectors and promhttp's own promhttp_metric_handler_* series. It
// satisfies dispatch.Observer, sharding.Observer and failover.Observer; the gauges and the counters kept
// elsewhere are read from Config.Sources when Prometheus scrapes, and a nil source leaves its series out.
//
// Per-job labels are off by default, so that 10,000 jobs do not make 10,000 series per metric. With
// Config.PerJobLabels the series marked "job?" below gain a job label; without it they have none.
//
//	| Metric                                       | Type      | Labels                | Meaning                                                            |
//	|----------------------------------------------|-----------|-----------------------|--------------------------------------------------------------------|
//	| ejserver_fires_total                         | counter   | job?, source          | fires that started at least one item on this peer                  |
//	| ejserver_fires_skipped_total                 | counter   | job?, reason          | fires (or an item of a fire) this peer skipped, by bounded reason  |
//	| ejserver_item_executions_total               | counter   | job?, source, outcome | items delivered to their webhook; outcome is success or failure    |
//	| ejserver_misfires_total                      | counter   | job?                  | items a fire found still running (a catch-up follows)              |
//	| ejserver_failovers_total                     | counter   | job?                  | items of a vanished instance this peer took over                   |
//	| ejserver_reshardings_total                   | counter   | job?                  | reshardings this peer ran as the job's leader                      |
//	| ejserver_resharding_duration_seconds         | histogram |                       | time one resharding took                                           |
//	| ejserver_webhook_duration_seconds            | histogram | outcome               | one item's delivery: every attempt and back-off, 1 ms to 60 s      |
//	| ejserver_fire_lateness_seconds               | histogram | source                | an item's start minus its scheduled time, 0.5 ms to 30 s           |
//	| ejserver_webhook_requests_in_flight          | gauge     |                       | webhook requests being sent now                                    |
//	| ejserver_webhook_requests_waiting            | gauge     |                       | deliveries waiting for a free request slot                         |
//	| ejserver_leaderships                         | gauge     |                       | jobs this peer is the leader of                                    |
//	| ejserver_scheduled_jobs                      | gauge     |                       | jobs in this peer's scheduler                                      |
//	| ejserver_zookeeper_session_up                | gauge     |                       | 1 while the ZooKeeper session is connected and healthy, else 0     |
//	| ejserver_zookeeper_lease_valid               | gauge     |                       | 1 while this peer may start work (its session lease holds), else 0 |
//	| ejserver_zookeeper_reconnects_total          | counter   |                       | ZooKeeper reconnections                                            |
//	| ejserver_zookeeper_session_expirations_total | counter   |                       | ZooKeeper session expirations                                      |
//	| ejserver_zookeeper_requests_total            | counter   | op                    | ZooKeeper requests sent, by operation (a multi carries many ops)   |
//	| ejserver_zookeeper_events_total              | counter   |                       | ZooKeeper watch events received                                    |
//	| ejserver_history_backlog                     | gauge     |                       | history records queued, being written or waiting for a retry       |
//	| ejserver_history_written_total               | counter   |                       | history records written                                            |
//	| ejserver_history_dropped_total               | counter   |                       | history records lost (queue full, rejected, or left at stop)       |
//	| ejserver_history_write_failures_total        | counter   |                       | failed history writes                                              |
//	| ejserver_history_status_traces_shed_total    | counter   |                       | tasks left without status traces while the writer was behind       |
//	| ejserver_history_degraded                    | gauge     |                       | 1 while the last history write failed, else 0                      |
//	| ejserver_history_rollup_behind_seconds       | gauge     |                       | how long the oldest execution the stats rollup has not counted has been due (SQLite) |
//	| ejserver_build_info                          | gauge     | version, commit, goversion | always 1: the running build (Config.Build)                    |
//
// Label values:
//
//   - source: NORMAL_TRIGGER, MISFIRE, FAILOVER, MANUAL (ejserver.Source), or other for anything else.
//   - outcome: success, failure.
//   - reason: config, disabled, session, not_registered, server_disabled, clock, sharding,
//     still_running, calendar, paused, ended (a job's calendars, pause, endAt or remainingFires), other. The executor passes free text; SkipReason maps it to one of these by the
//     text's prefix, and anything it does not know becomes other.
//   - job: the job's name, only with Config.PerJobLabels.
//
// Fire lateness is labelled by source because the sources mean different things by it: a MISFIRE
// catch-up starts when the run it waited for ends, and a FAILOVER item when a peer notices the crash,
// both long after their scheduled time, while NORMAL_TRIGGER lateness matters in tens of milliseconds. A
// negative lateness (a timer that fired early) is recorded as 0, so the histogram's sum never falls.
package metrics
