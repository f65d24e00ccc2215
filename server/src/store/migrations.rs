//! Versioned schema migrations, tracked in `PRAGMA user_version`.
//!
//! Migrations are append-only: each entry upgrades the schema by one
//! version inside its own transaction, so a crash mid-upgrade leaves the
//! previous version intact. A database newer than this binary is refused
//! rather than guessed at.

use super::error::StoreError;
use rusqlite::Connection;

/// Schema versions, in order; index 0 upgrades version 0 to 1.
const MIGRATIONS: &[&str] = &[
    // 1: conversations and their messages.
    r#"
    CREATE TABLE conversations (
        seq            INTEGER PRIMARY KEY AUTOINCREMENT,
        id             TEXT NOT NULL UNIQUE,
        session_id     TEXT NOT NULL,
        status         TEXT NOT NULL,
        pipeline_state TEXT,
        created_at     TEXT NOT NULL,
        updated_at     TEXT NOT NULL
    );
    CREATE INDEX conversations_by_status ON conversations(status, seq);
    CREATE TABLE messages (
        seq             INTEGER PRIMARY KEY AUTOINCREMENT,
        id              TEXT NOT NULL UNIQUE,
        conversation_id TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        role            TEXT NOT NULL,
        content         TEXT NOT NULL,
        tool_call       TEXT,
        created_at      TEXT NOT NULL
    );
    CREATE INDEX messages_by_conversation ON messages(conversation_id, seq);
    "#,
    // 2: what the turn loop needs to resume, and approvals as rows.
    r#"
    ALTER TABLE messages ADD COLUMN call_id TEXT;
    ALTER TABLE messages ADD COLUMN step TEXT;
    ALTER TABLE messages ADD COLUMN server TEXT;
    ALTER TABLE messages ADD COLUMN signature TEXT;
    ALTER TABLE messages ADD COLUMN started_at TEXT;
    ALTER TABLE messages ADD COLUMN finished_at TEXT;
    ALTER TABLE conversations ADD COLUMN turn_running INTEGER NOT NULL DEFAULT 0;
    CREATE TABLE approvals (
        uuid              TEXT PRIMARY KEY,
        conversation_id   TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        message_id        TEXT NOT NULL UNIQUE REFERENCES messages(id) ON DELETE CASCADE,
        tool_name         TEXT NOT NULL,
        server            TEXT,
        tool_args         TEXT NOT NULL,
        description       TEXT NOT NULL,
        status            TEXT NOT NULL,
        reason            TEXT,
        decided_by        TEXT,
        decided_at        TEXT,
        remote_task_id    TEXT,
        remote_agent_name TEXT,
        chain             TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL
    );
    CREATE INDEX approvals_by_status ON approvals(status, created_at);
    CREATE INDEX approvals_by_conversation ON approvals(conversation_id, status);
    "#,
    // 3: pipelines: the node that wrote a message and the node run it belongs to.
    r#"
    ALTER TABLE messages ADD COLUMN node TEXT;
    ALTER TABLE messages ADD COLUMN node_run TEXT;
    "#,
    // 4: several approvals per call: a call to a sub-agent can wait on one
    // proxy approval after another (each round of the remote asking).
    r#"
    CREATE TABLE approvals_v4 (
        uuid              TEXT PRIMARY KEY,
        conversation_id   TEXT NOT NULL REFERENCES conversations(id) ON DELETE CASCADE,
        message_id        TEXT NOT NULL REFERENCES messages(id) ON DELETE CASCADE,
        tool_name         TEXT NOT NULL,
        server            TEXT,
        tool_args         TEXT NOT NULL,
        description       TEXT NOT NULL,
        status            TEXT NOT NULL,
        reason            TEXT,
        decided_by        TEXT,
        decided_at        TEXT,
        remote_task_id    TEXT,
        remote_agent_name TEXT,
        chain             TEXT,
        created_at        TEXT NOT NULL,
        updated_at        TEXT NOT NULL
    );
    INSERT INTO approvals_v4 SELECT uuid, conversation_id, message_id, tool_name, server, tool_args, description,
        status, reason, decided_by, decided_at, remote_task_id, remote_agent_name, chain, created_at, updated_at
        FROM approvals ORDER BY rowid;
    DROP TABLE approvals;
    ALTER TABLE approvals_v4 RENAME TO approvals;
    CREATE INDEX approvals_by_status ON approvals(status, created_at);
    CREATE INDEX approvals_by_conversation ON approvals(conversation_id, status);
    CREATE INDEX approvals_by_message ON approvals(message_id);
    "#,
    // 5: the A2A context id a client chose for a conversation.
    r#"
    ALTER TABLE conversations ADD COLUMN context_id TEXT;
    CREATE INDEX conversations_by_context ON conversations(context_id, seq);
    "#,
    // 6: who may approve (AUTH.md): who asked and who decided, browser
    // sessions, and the hash-chained audit trail.
    r#"
    ALTER TABLE conversations ADD COLUMN created_by TEXT;
    ALTER TABLE conversations ADD COLUMN requested_by TEXT;
    ALTER TABLE conversations ADD COLUMN requested_session TEXT;
    ALTER TABLE approvals ADD COLUMN requested_by TEXT;
    ALTER TABLE approvals ADD COLUMN requested_session TEXT;
    ALTER TABLE approvals ADD COLUMN decided_via TEXT;
    ALTER TABLE approvals ADD COLUMN decided_session TEXT;
    CREATE TABLE sessions (
        id_hash    TEXT PRIMARY KEY,
        name       TEXT NOT NULL,
        roles      TEXT NOT NULL,
        created_at TEXT NOT NULL,
        expires_at TEXT NOT NULL
    );
    CREATE TABLE audit (
        seq             INTEGER PRIMARY KEY,
        at              TEXT NOT NULL,
        actor           TEXT NOT NULL,
        event           TEXT NOT NULL,
        conversation_id TEXT,
        approval_uuid   TEXT,
        details         TEXT NOT NULL,
        prev_hash       TEXT NOT NULL,
        hash            TEXT NOT NULL
    );
    "#,
    // 7: the W3C trace context of the turn that asked for an approval, so
    // the wait and the work after the decision join that trace.
    r#"
    ALTER TABLE approvals ADD COLUMN traceparent TEXT;
    "#,
];

/// The schema version this binary writes.
pub const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings `conn` up to [`CURRENT_VERSION`].
pub fn migrate(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
    let found: i64 = conn.query_row("PRAGMA user_version", [], |r| r.get(0))?;
    if found > CURRENT_VERSION {
        return Err(StoreError::TooNew {
            path: path.to_string(),
            found,
            known: CURRENT_VERSION,
        });
    }
    for (i, sql) in MIGRATIONS.iter().enumerate().skip(found as usize) {
        let tx = conn.transaction()?;
        tx.execute_batch(sql)?;
        tx.pragma_update(None, "user_version", i as i64 + 1)?;
        tx.commit()?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn migrating_twice_is_a_no_op_and_sets_the_version() {
        let mut conn = Connection::open_in_memory().unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        let v: i64 = conn
            .query_row("PRAGMA user_version", [], |r| r.get(0))
            .unwrap();
        assert_eq!(v, CURRENT_VERSION);
    }

    #[test]
    fn a_newer_database_is_refused() {
        let mut conn = Connection::open_in_memory().unwrap();
        conn.pragma_update(None, "user_version", CURRENT_VERSION + 1)
            .unwrap();
        let e = migrate(&mut conn, "x.db").unwrap_err();
        assert!(matches!(e, StoreError::TooNew { .. }), "{e}");
        assert!(e.to_string().contains("newer than this agent"));
    }
}
