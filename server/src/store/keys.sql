-- Keys the agent makes for itself and every replica shares: the first
-- replica to need one stores it, the others read it (CLIENTS.md §2: the
-- MCP round state's HMAC key). The same text on SQLite and PostgreSQL.
CREATE TABLE server_keys (
    name       TEXT PRIMARY KEY,
    secret     TEXT NOT NULL,
    created_at TEXT NOT NULL
);
