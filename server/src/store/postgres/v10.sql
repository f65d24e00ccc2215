-- Schema v10: questions a tool asks the human (QUESTIONS.md §2-§3), and the
-- conversation status `waiting_input`, which A2A shows as `input-required`
-- even while the turn runs (a question on a live MCP session waits inside
-- the running call): the generated task state is rebuilt with it, with its
-- index, triggers and counts.
CREATE TABLE questions (
    seq          BIGSERIAL PRIMARY KEY,
    uuid         TEXT NOT NULL UNIQUE,
    conversation_id TEXT NOT NULL,
    message_id   TEXT NOT NULL,
    round        TEXT NOT NULL,
    era          TEXT NOT NULL,
    status       TEXT NOT NULL,
    body         TEXT NOT NULL,
    state        TEXT,
    answered     TEXT,
    action       TEXT,
    content      TEXT,
    asked_at     TEXT NOT NULL,
    expires_at   TEXT,
    answered_by  TEXT,
    answered_via TEXT,
    answered_at  TEXT,
    requested_by TEXT
);
CREATE INDEX questions_by_status ON questions(status, seq);
CREATE INDEX questions_by_call ON questions(message_id, seq);
CREATE INDEX questions_by_conversation ON questions(conversation_id, status);
CREATE INDEX questions_by_expiry ON questions(expires_at) WHERE status = 'pending';

DROP TRIGGER conversations_task_counted ON conversations;
DROP TRIGGER conversations_task_recounted ON conversations;
DROP INDEX conversations_by_task_state;
ALTER TABLE conversations DROP COLUMN task_state;
ALTER TABLE conversations ADD COLUMN task_state TEXT GENERATED ALWAYS AS (
    CASE
        WHEN status = 'waiting_input' THEN 'input-required'
        WHEN turn_running THEN 'working'
        WHEN status = 'waiting_approval' THEN 'input-required'
        WHEN status = 'failed' THEN 'failed'
        WHEN status = 'cancelled' THEN 'canceled'
        WHEN last_talk IS NULL THEN 'submitted'
        WHEN last_talk = 'assistant' THEN 'completed'
        ELSE 'failed'
    END) STORED;
CREATE INDEX conversations_by_task_state ON conversations(task_state, seq);
DELETE FROM task_deltas;
DELETE FROM task_counts;
INSERT INTO task_counts (state, n) SELECT task_state, COUNT(*) FROM conversations GROUP BY task_state;
CREATE TRIGGER conversations_task_counted AFTER INSERT OR DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION stopgo_count_task_state();
CREATE TRIGGER conversations_task_recounted AFTER UPDATE ON conversations
    FOR EACH ROW WHEN (OLD.task_state IS DISTINCT FROM NEW.task_state)
    EXECUTE FUNCTION stopgo_count_task_state();
