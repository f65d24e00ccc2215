-- Signed approval receipts (RECEIPTS.md §1): the compact JWS of the call
-- an approval let through, written when the call is claimed to run. And
-- whether a call cut by a crash was already retried with its idempotency
-- key (RECEIPTS.md §3: once).
ALTER TABLE approvals ADD COLUMN receipt TEXT;
ALTER TABLE approvals ADD COLUMN retried INTEGER NOT NULL DEFAULT 0;
-- The receipt an upstream agent sent with the A2A continuation that
-- approved this (proxy) approval: this agent's receipt names its approvers
-- in `chain`.
ALTER TABLE approvals ADD COLUMN upstream_receipt TEXT;
