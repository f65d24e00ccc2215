-- Schema v9: two checks that raise, so that a write sent without waiting
-- for its answer (pipelined, see tx.rs) fails its transaction, and a
-- COMMIT pipelined after it rolls back, instead of committing anyway.
--
-- The fence: the lease a turn writes under is still this replica's. FOR
-- SHARE: a replica taking the lease over waits for this transaction.
CREATE FUNCTION stopgo_fence(conversation TEXT, held_epoch BIGINT, holder TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    PERFORM 1 FROM leases
     WHERE conversation_id = conversation AND epoch = held_epoch AND owner = holder
       FOR SHARE;
    IF NOT FOUND THEN
        RAISE EXCEPTION 'the lease of conversation % moved to another replica', conversation
            USING ERRCODE = 'SG001';
    END IF;
END $$;

-- A statement changed as many rows as it had to.
CREATE FUNCTION stopgo_expect(changed BIGINT, wanted BIGINT, what TEXT)
RETURNS void LANGUAGE plpgsql AS $$
BEGIN
    IF changed <> wanted THEN
        RAISE EXCEPTION '%: % rows changed where % were expected', what, changed, wanted
            USING ERRCODE = 'SG002';
    END IF;
END $$;
