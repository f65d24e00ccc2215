-- Schema v5: the A2A task state, derived in the row (a generated column,
-- the same rule as `a2a::tasks::task_state`) from the status, the running
-- flag and the role of the newest user or assistant message with text
-- (`last_talk`, kept by `append`), indexed, so `ListTasks` with a status
-- filter reads one page.
-- Its counts are kept as delta rows: a change inserts (state, +1/-1) and
-- locks nothing, so turns never wait on each other for a counter, and no
-- two transactions can take counter rows in opposite orders (a turn moves
-- its task's state several times per transaction). The replicas fold the
-- deltas into `task_counts` on their heartbeat; a count is the kept total
-- plus the deltas not folded yet.
ALTER TABLE conversations ADD COLUMN last_talk TEXT;
UPDATE conversations c SET last_talk = (SELECT m.role FROM messages m
    WHERE m.conversation_id = c.id AND m.role IN ('user', 'assistant')
      AND m.content != '' ORDER BY m.seq DESC LIMIT 1);
ALTER TABLE conversations ADD COLUMN task_state TEXT GENERATED ALWAYS AS (
    CASE
        WHEN turn_running THEN 'working'
        WHEN status = 'waiting_approval' THEN 'input-required'
        WHEN status = 'failed' THEN 'failed'
        WHEN status = 'cancelled' THEN 'canceled'
        WHEN last_talk IS NULL THEN 'submitted'
        WHEN last_talk = 'assistant' THEN 'completed'
        ELSE 'failed'
    END) STORED;
CREATE INDEX conversations_by_task_state ON conversations(task_state, seq);
CREATE TABLE task_counts (state TEXT PRIMARY KEY, n BIGINT NOT NULL);
INSERT INTO task_counts (state, n) SELECT task_state, COUNT(*) FROM conversations GROUP BY task_state;
CREATE TABLE task_deltas (id BIGSERIAL PRIMARY KEY, state TEXT NOT NULL, n INTEGER NOT NULL);
CREATE INDEX task_deltas_by_state ON task_deltas(state);
CREATE FUNCTION stopgo_count_task_state() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP IN ('UPDATE', 'DELETE') THEN
        INSERT INTO task_deltas (state, n) VALUES (OLD.task_state, -1);
    END IF;
    IF TG_OP IN ('INSERT', 'UPDATE') THEN
        INSERT INTO task_deltas (state, n) VALUES (NEW.task_state, 1);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER conversations_task_counted AFTER INSERT OR DELETE ON conversations
    FOR EACH ROW EXECUTE FUNCTION stopgo_count_task_state();
CREATE TRIGGER conversations_task_recounted AFTER UPDATE ON conversations
    FOR EACH ROW WHEN (OLD.task_state IS DISTINCT FROM NEW.task_state)
    EXECUTE FUNCTION stopgo_count_task_state();
