-- Schema v6: what asked for an approval (an `approvals:` rule's name,
-- `annotation`, `unannotated`, `proxy`), who may decide it (JSON list;
-- NULL: any approver), how many must approve and their votes so far (JSON
-- list, written under the row's lock), and its expiry: the lifetime in
-- seconds, when it ends, whether it was escalated once, and the arguments
-- an approver edited before approving (POLICY.md §1-§3).
-- The sweepers find due approvals by an index.
ALTER TABLE approvals ADD COLUMN rule TEXT;
ALTER TABLE approvals ADD COLUMN approvers TEXT;
ALTER TABLE approvals ADD COLUMN quorum INTEGER NOT NULL DEFAULT 1;
ALTER TABLE approvals ADD COLUMN votes TEXT;
ALTER TABLE approvals ADD COLUMN expires_in INTEGER;
ALTER TABLE approvals ADD COLUMN expires_at TEXT;
ALTER TABLE approvals ADD COLUMN escalated INTEGER NOT NULL DEFAULT 0;
ALTER TABLE approvals ADD COLUMN edited_args TEXT;
ALTER TABLE approvals ADD COLUMN edited_by TEXT;
ALTER TABLE approvals ADD COLUMN remote_approval_uuid TEXT;
CREATE INDEX approvals_by_expiry ON approvals(expires_at) WHERE status = 'pending' AND expires_at IS NOT NULL;
-- Each MCP tool's definition as first seen (or last accepted), and a
-- changed one waiting for an admin (POLICY.md §4).
CREATE TABLE tool_pins (
    server             TEXT NOT NULL,
    tool               TEXT NOT NULL,
    digest             TEXT NOT NULL,
    definition         TEXT NOT NULL,
    pinned_at          TEXT NOT NULL,
    changed_digest     TEXT,
    changed_definition TEXT,
    changed_at         TEXT,
    PRIMARY KEY (server, tool)
);
