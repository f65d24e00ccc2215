-- Signed approval receipts (RECEIPTS.md §1): the compact JWS of the call
-- an approval let through, written when the call is claimed to run.
ALTER TABLE approvals ADD COLUMN receipt TEXT;
