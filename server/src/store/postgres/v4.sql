-- Schema v4: 64 slots per status instead of 16. A slot's row lock is held
-- to the commit, and the transaction that creates a conversation then
-- waits for the audit chain's head: with 32 concurrent turns, 16 slots
-- still made turns queue behind each other's audit append. Summing 64
-- rows per status costs nothing measurable.
CREATE OR REPLACE FUNCTION stopgo_count_status() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s TEXT;
    d BIGINT;
    k SMALLINT := floor(random() * 64)::SMALLINT;
BEGIN
    FOR s, d IN
        SELECT x.status, x.delta FROM (VALUES
            (CASE WHEN TG_OP IN ('UPDATE', 'DELETE') THEN OLD.status END, -1),
            (CASE WHEN TG_OP IN ('INSERT', 'UPDATE') THEN NEW.status END, 1)) AS x(status, delta)
        WHERE x.status IS NOT NULL ORDER BY x.status
    LOOP
        INSERT INTO status_counts (status, slot, n) VALUES (s, k, d)
            ON CONFLICT (status, slot) DO UPDATE SET n = status_counts.n + EXCLUDED.n;
    END LOOP;
    RETURN NULL;
END $$;

-- The audit chain appended in the database, for a chain without a key
-- (plain SHA-256; with `audit.key` the rows are hashed in the process,
-- which never sends the key anywhere). The caller sends this call and
-- COMMIT in one message, so the head's lock is held for the time the
-- server takes to run them, never across a round trip to a replica: at 32
-- concurrent turns, that lock was what every turn queued on.
-- A row's canonical JSON is sent without its `seq`, which sorts last
-- (`{…,"seq":` here, then the number and `}`): the same bytes the process
-- hashes, see `audit::canonical_row`.
CREATE FUNCTION stopgo_audit_append(ats TEXT[], actors TEXT[], events TEXT[], conversations TEXT[],
                                    approvals TEXT[], details TEXT[], prefixes TEXT[])
RETURNS BIGINT LANGUAGE plpgsql AS $$
DECLARE
    head_seq BIGINT;
    head_hash TEXT;
    row_hash TEXT;
BEGIN
    SELECT seq, hash INTO head_seq, head_hash FROM audit_head FOR UPDATE;
    FOR i IN 1 .. coalesce(array_length(ats, 1), 0) LOOP
        head_seq := head_seq + 1;
        row_hash := encode(sha256(convert_to(head_hash || prefixes[i] || head_seq::TEXT || '}', 'UTF8')), 'hex');
        INSERT INTO audit (seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash)
            VALUES (head_seq, ats[i], actors[i], events[i], conversations[i], approvals[i], details[i],
                    head_hash, row_hash);
        head_hash := row_hash;
    END LOOP;
    UPDATE audit_head SET seq = head_seq, hash = head_hash;
    RETURN head_seq;
END $$;
