-- Grants (REACH.md §3): an approval that lets later identical calls of the
-- same tool run without asking, for a while. One text for both backends:
-- SQLite migration 14 and PostgreSQL schema v11.
CREATE TABLE grants (
    id             TEXT PRIMARY KEY,
    created_at     TEXT NOT NULL,
    created_by     TEXT NOT NULL,
    created_roles  TEXT NOT NULL,
    created_via    TEXT NOT NULL,
    signin         TEXT,
    approval_uuid  TEXT NOT NULL,
    scope          TEXT NOT NULL,
    conversation_id TEXT,
    tool           TEXT NOT NULL,
    server         TEXT,
    rule           TEXT NOT NULL,
    match_pointers TEXT,
    match_values   TEXT NOT NULL,
    expires_at     TEXT NOT NULL,
    uses           BIGINT NOT NULL DEFAULT 0,
    last_used_at   TEXT,
    revoked_at     TEXT,
    revoked_by     TEXT
);
CREATE INDEX grants_live ON grants(expires_at) WHERE revoked_at IS NULL;
CREATE INDEX grants_by_signin ON grants(signin) WHERE revoked_at IS NULL;
