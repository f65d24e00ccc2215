-- Version 1 of the PostgreSQL schema: the SQLite schema at its version 8,
-- in one step (PostgreSQL support starts there). Times are RFC 3339 text,
-- as on SQLite, so both backends store and order them the same way.
CREATE TABLE conversations (
    seq               BIGSERIAL PRIMARY KEY,
    id                TEXT NOT NULL UNIQUE,
    session_id        TEXT NOT NULL,
    status            TEXT NOT NULL,
    pipeline_state    TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    turn_running      BOOLEAN NOT NULL DEFAULT FALSE,
    context_id        TEXT,
    created_by        TEXT,
    requested_by      TEXT,
    requested_session TEXT,
    message_count     BIGINT NOT NULL DEFAULT 0,
    title             TEXT,
    last_role         TEXT,
    last_content      TEXT
);
CREATE INDEX conversations_by_status ON conversations(status, seq);
CREATE INDEX conversations_by_context ON conversations(context_id, seq);
CREATE INDEX conversations_running ON conversations(seq) WHERE turn_running;

CREATE TABLE messages (
    seq             BIGSERIAL PRIMARY KEY,
    id              TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    role            TEXT NOT NULL,
    content         TEXT NOT NULL,
    tool_call       TEXT,
    created_at      TEXT NOT NULL,
    call_id         TEXT,
    step            TEXT,
    server          TEXT,
    signature       TEXT,
    started_at      TEXT,
    finished_at     TEXT,
    node            TEXT,
    node_run        TEXT
);
CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);

CREATE TABLE approvals (
    seq               BIGSERIAL,
    uuid              TEXT PRIMARY KEY,
    conversation_id   TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
    message_id        TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
    tool_name         TEXT NOT NULL,
    server            TEXT,
    tool_args         TEXT NOT NULL,
    description       TEXT NOT NULL,
    status            TEXT NOT NULL,
    reason            TEXT,
    decided_by        TEXT,
    decided_at        TEXT,
    remote_task_id    TEXT,
    remote_agent_name TEXT,
    chain             TEXT,
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL,
    requested_by      TEXT,
    requested_session TEXT,
    decided_via       TEXT,
    decided_session   TEXT,
    traceparent       TEXT
);
CREATE INDEX approvals_by_status ON approvals(status, created_at);
CREATE INDEX approvals_by_conversation ON approvals(conversation_id, status);
CREATE INDEX approvals_by_message ON approvals(message_id, seq);

CREATE TABLE sessions (
    id_hash    TEXT PRIMARY KEY,
    name       TEXT NOT NULL,
    roles      TEXT NOT NULL,
    created_at TEXT NOT NULL,
    expires_at TEXT NOT NULL
);

CREATE TABLE audit (
    seq             BIGINT PRIMARY KEY,
    at              TEXT NOT NULL,
    actor           TEXT NOT NULL,
    event           TEXT NOT NULL,
    conversation_id TEXT,
    approval_uuid   TEXT,
    details         TEXT NOT NULL,
    prev_hash       TEXT NOT NULL,
    hash            TEXT NOT NULL
);
-- The chain's head, one row: appending locks it (FOR UPDATE), so appends
-- from every replica form one chain, in commit order.
CREATE TABLE audit_head (
    one  BOOLEAN PRIMARY KEY DEFAULT TRUE CHECK (one),
    seq  BIGINT NOT NULL,
    hash TEXT NOT NULL
);
INSERT INTO audit_head (seq, hash) VALUES (0, '0000000000000000000000000000000000000000000000000000000000000000');

-- Counts by status, kept by triggers in the transaction of each change.
CREATE TABLE status_counts (status TEXT PRIMARY KEY, n BIGINT NOT NULL);
-- A status change takes the two counter rows in a fixed order (by name),
-- so two transactions moving conversations in opposite directions never
-- wait on each other in a cycle.
CREATE FUNCTION stopgo_count_status() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s TEXT;
BEGIN
    FOR s IN
        SELECT x.status FROM (VALUES
            (CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN OLD.status END),
            (CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN NEW.status END)) AS x(status)
        WHERE x.status IS NOT NULL ORDER BY x.status
    LOOP
        IF TG_OP IN ('UPDATE', 'DELETE') AND s = OLD.status THEN
            UPDATE status_counts SET n = n - 1 WHERE status = s;
        ELSE
            INSERT INTO status_counts (status, n) VALUES (s, 1)
                ON CONFLICT (status) DO UPDATE SET n = status_counts.n + 1;
        END IF;
    END LOOP;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_counted AFTER INSERT OR DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION stopgo_count_status();
CREATE TRIGGER conversations_recounted AFTER UPDATE OF status ON conversations
    FOR EACH ROW WHEN (OLD.status IS DISTINCT FROM NEW.status)
    EXECUTE FUNCTION stopgo_count_status();
