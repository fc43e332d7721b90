-- The audit trail (README "Audit trail and tracing"): one row per change, token failure (folded per source
-- per minute) or change made in ZooKeeper outside the API. Append-only: only the pruner deletes rows. A new
-- table: peers on version 3 neither read nor write it.

CREATE TABLE AUDIT_LOG (
    id          TEXT    PRIMARY KEY,
    at          INTEGER NOT NULL,           -- microseconds since the epoch, as the other tables
    actor       TEXT    NOT NULL DEFAULT '',
    actor_kind  TEXT    NOT NULL,           -- token | certificate | open | unknown | zookeeper | jobs-file
    role        TEXT    NOT NULL DEFAULT '',
    scope       TEXT    NOT NULL DEFAULT '',
    source      TEXT    NOT NULL DEFAULT '',
    user_agent  TEXT    NOT NULL DEFAULT '',
    request_id  TEXT    NOT NULL DEFAULT '',
    action      TEXT    NOT NULL,
    job_name    TEXT    NOT NULL DEFAULT '',
    item        INTEGER,                    -- NULL: not about one item
    server      TEXT    NOT NULL DEFAULT '',
    channel     TEXT    NOT NULL DEFAULT '',
    outcome     TEXT    NOT NULL,           -- ok | failed
    status_code INTEGER NOT NULL DEFAULT 0,
    changes     TEXT    NOT NULL DEFAULT '', -- JSON list of field changes (never a secret's value)
    detail      TEXT    NOT NULL DEFAULT '',
    count       INTEGER NOT NULL DEFAULT 1,
    instance_id TEXT    NOT NULL DEFAULT ''
);
CREATE INDEX audit_log_at     ON AUDIT_LOG (at, id);
CREATE INDEX audit_log_job    ON AUDIT_LOG (job_name, at, id);
CREATE INDEX audit_log_actor  ON AUDIT_LOG (actor, at, id);
CREATE INDEX audit_log_action ON AUDIT_LOG (action, at, id);
