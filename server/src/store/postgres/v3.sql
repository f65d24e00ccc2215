-- Schema v3: each status's count is spread over 16 slots, and a change
-- adds or subtracts one in a random slot. Every status change of every
-- replica used to update the same row, whose lock is held to commit: at 32
-- concurrent turns that one row serialised the commits. A slot may go
-- negative; the count is the sum of a status's slots.
ALTER TABLE status_counts ADD COLUMN slot SMALLINT NOT NULL DEFAULT 0;
ALTER TABLE status_counts DROP CONSTRAINT status_counts_pkey;
ALTER TABLE status_counts ADD PRIMARY KEY (status, slot);

-- The rows of one change are still taken in a fixed order (status, then
-- slot), so two opposite moves never wait on each other in a cycle.
CREATE OR REPLACE FUNCTION stopgo_count_status() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    s TEXT;
    d BIGINT;
    k SMALLINT := floor(random() * 16)::SMALLINT;
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
