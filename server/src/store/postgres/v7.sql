-- Schema v7: the notification outbox, one row per event per target,
-- found by the workers of every replica through its due index (claimed
-- with FOR UPDATE SKIP LOCKED), and the signed links used so far (each
-- works once) (POLICY.md §5).
CREATE TABLE notifications (
    id            TEXT PRIMARY KEY,
    target        TEXT NOT NULL,
    event         TEXT NOT NULL,
    approval_uuid TEXT,
    status        TEXT NOT NULL,
    attempts      BIGINT NOT NULL DEFAULT 0,
    next_at       TEXT NOT NULL,
    created_at    TEXT NOT NULL,
    updated_at    TEXT NOT NULL,
    last_error    TEXT,
    delivered_at  TEXT,
    payload       TEXT NOT NULL,
    since         TEXT NOT NULL
);
CREATE INDEX notifications_due ON notifications(next_at) WHERE status = 'pending';
CREATE INDEX notifications_by_time ON notifications(created_at);
CREATE TABLE link_uses (
    link_id       TEXT PRIMARY KEY,
    approval_uuid TEXT NOT NULL,
    used_by       TEXT NOT NULL,
    used_at       TEXT NOT NULL
);
