-- Alert notifications (README "Alerts"): one row per notification per channel, what was sent where and how
-- it went. A new table: peers on version 2 neither read nor write it.

CREATE TABLE NOTIFICATION_LOG (
    id              TEXT    PRIMARY KEY,        -- notification_id/channel
    notification_id TEXT    NOT NULL,
    channel         TEXT    NOT NULL,
    channel_kind    TEXT    NOT NULL DEFAULT '',
    kind            TEXT    NOT NULL,           -- ITEM_FAILED, FIRE_FAILED, ..., RECOVERED, TEST
    severity        TEXT    NOT NULL DEFAULT '',
    job_name        TEXT    NOT NULL DEFAULT '',
    rule            TEXT    NOT NULL DEFAULT '',
    dedup_key       TEXT    NOT NULL DEFAULT '',
    is_resolve      INTEGER NOT NULL DEFAULT 0,
    title           TEXT    NOT NULL DEFAULT '',
    outcome         TEXT    NOT NULL,           -- sent | failed | dropped | unknown
    attempts        INTEGER NOT NULL DEFAULT 0,
    status_code     INTEGER NOT NULL DEFAULT 0,
    error           TEXT    NOT NULL DEFAULT '',
    instance_id     TEXT    NOT NULL DEFAULT '',
    created_at      INTEGER NOT NULL,           -- microseconds since the epoch, as the other tables
    finished_at     INTEGER NOT NULL
);
CREATE INDEX notification_log_finished ON NOTIFICATION_LOG (finished_at, id);
CREATE INDEX notification_log_channel  ON NOTIFICATION_LOG (channel, finished_at, id);
CREATE INDEX notification_log_job      ON NOTIFICATION_LOG (job_name, finished_at, id);
