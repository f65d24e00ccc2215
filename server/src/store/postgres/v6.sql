-- Schema v6: what asked for an approval (an `approvals:` rule's name,
-- `annotation`, `unannotated`, `proxy`), who may decide it (JSON list;
-- NULL: any approver), how many must approve and their votes so far (JSON
-- list, written under the row's lock), POLICY.md §1-§2.
ALTER TABLE approvals ADD COLUMN rule TEXT;
ALTER TABLE approvals ADD COLUMN approvers TEXT;
ALTER TABLE approvals ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN votes TEXT;
