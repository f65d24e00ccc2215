//! Versioned schema migrations, tracked in `PRAGMA user_version`.
//!
//! Migrations are append-only: each entry upgrades the schema by one
//! version inside its own transaction, so a crash mid-upgrade leaves the
//! previous version intact. A database newer than this binary is refused
//! rather than guessed at.

use crate::store::error::StoreError;
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
    // 8: what a list shows, kept on the conversation row (message count,
    // title, newest message's start) and the counts by status, kept by
    // triggers: listing costs the same however many conversations are
    // stored and however long they are.
    r#"
    ALTER TABLE conversations ADD COLUMN message_count INTEGER NOT NULL DEFAULT 0;
    ALTER TABLE conversations ADD COLUMN title TEXT;
    ALTER TABLE conversations ADD COLUMN last_role TEXT;
    ALTER TABLE conversations ADD COLUMN last_content TEXT;
    UPDATE conversations SET
        message_count = (SELECT COUNT(*) FROM messages m WHERE m.conversation_id = conversations.id),
        title = (SELECT substr(m.content, 1, 200) FROM messages m
                 WHERE m.conversation_id = conversations.id AND m.role = 'user' AND m.content != ''
                 ORDER BY m.seq LIMIT 1),
        last_role = (SELECT m.role FROM messages m
                     WHERE m.conversation_id = conversations.id AND m.content != ''
                     ORDER BY m.seq DESC LIMIT 1),
        last_content = (SELECT substr(m.content, 1, 200) FROM messages m
                        WHERE m.conversation_id = conversations.id AND m.content != ''
                        ORDER BY m.seq DESC LIMIT 1);
    CREATE TABLE status_counts (status TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO status_counts (status, n) SELECT status, COUNT(*) FROM conversations GROUP BY status;
    CREATE TRIGGER conversations_counted AFTER INSERT ON conversations BEGIN
        INSERT INTO status_counts (status, n) VALUES (new.status, 1)
            ON CONFLICT (status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER conversations_recounted AFTER UPDATE OF status ON conversations
    WHEN old.status IS NOT new.status BEGIN
        UPDATE status_counts SET n = n - 1 WHERE status = old.status;
        INSERT INTO status_counts (status, n) VALUES (new.status, 1)
            ON CONFLICT (status) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER conversations_uncounted AFTER DELETE ON conversations BEGIN
        UPDATE status_counts SET n = n - 1 WHERE status = old.status;
    END;
    "#,
    // 9: the A2A task state, derived in the row (a generated column, the
    // same rule as `a2a::tasks::task_state`) from the status, the running
    // flag and the role of the newest user or assistant message with text
    // (`last_talk`, kept by `append`); indexed, and counted by triggers,
    // so `ListTasks` with a status filter reads one page and one count.
    r#"
    ALTER TABLE conversations ADD COLUMN last_talk TEXT;
    UPDATE conversations SET last_talk = (SELECT m.role FROM messages m
        WHERE m.conversation_id = conversations.id AND m.role IN ('user', 'assistant')
          AND m.content != '' ORDER BY m.seq DESC LIMIT 1);
    ALTER TABLE conversations ADD COLUMN task_state TEXT GENERATED ALWAYS AS (
        CASE
            WHEN turn_running THEN 'working'
            WHEN status = 'waiting_approval' THEN 'input-required'
            WHEN status = 'failed' THEN 'failed'
            WHEN status = 'cancelled' THEN 'canceled'
            WHEN last_talk IS NULL THEN 'submitted'
            WHEN last_talk = 'assistant' THEN 'completed'
            ELSE 'failed'
        END) VIRTUAL;
    CREATE INDEX conversations_by_task_state ON conversations(task_state, seq);
    CREATE TABLE task_counts (state TEXT PRIMARY KEY, n INTEGER NOT NULL) WITHOUT ROWID;
    INSERT INTO task_counts (state, n) SELECT task_state, COUNT(*) FROM conversations GROUP BY task_state;
    CREATE TRIGGER conversations_task_counted AFTER INSERT ON conversations BEGIN
        INSERT INTO task_counts (state, n) VALUES (new.task_state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER conversations_task_recounted AFTER UPDATE ON conversations
    WHEN old.task_state IS NOT new.task_state BEGIN
        UPDATE task_counts SET n = n - 1 WHERE state = old.task_state;
        INSERT INTO task_counts (state, n) VALUES (new.task_state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER conversations_task_uncounted AFTER DELETE ON conversations BEGIN
        UPDATE task_counts SET n = n - 1 WHERE state = old.task_state;
    END;
    "#,
    // 10: what asked for an approval (an `approvals:` rule's name,
    // `annotation`, `unannotated`, `proxy`), who may decide it (JSON list;
    // NULL: any approver), how many must approve and their votes so far
    // (JSON list, written under the row's lock), its expiry (the lifetime
    // in seconds, when it ends, whether it was escalated once) and the
    // arguments an approver edited before approving, with who did
    // (POLICY.md §1-§3). The sweeper finds due approvals by an index.
    // `tool_pins`: each MCP tool's definition as first seen (or last
    // accepted) and a changed one waiting for an admin (§4).
    r#"
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
    "#,
    // Version 11: the notification outbox, one row per event per target,
    // found by the worker through its due index, and the signed links
    // used so far (each works once) (POLICY.md §5).
    r#"
    CREATE TABLE notifications (
        id            TEXT PRIMARY KEY,
        target        TEXT NOT NULL,
        event         TEXT NOT NULL,
        approval_uuid TEXT,
        status        TEXT NOT NULL,
        attempts      INTEGER NOT NULL DEFAULT 0,
        next_at       TEXT NOT NULL,
        created_at    TEXT NOT NULL,
        updated_at    TEXT NOT NULL,
        last_error    TEXT,
        delivered_at  TEXT,
        payload       TEXT NOT NULL,
        since         TEXT NOT NULL
    );
    CREATE INDEX notifications_due ON notifications(next_at) WHERE status = 'pending';
    CREATE INDEX notifications_by_time ON notifications(created_at);
    CREATE TABLE link_uses (
        link_id       TEXT PRIMARY KEY,
        approval_uuid TEXT NOT NULL,
        used_by       TEXT NOT NULL,
        used_at       TEXT NOT NULL
    );
    "#,
    // Version 12: A2A push notification configs (their token and
    // credentials sealed), with the last task state each was sent.
    r#"
    CREATE TABLE push_configs (
        uid         TEXT PRIMARY KEY,
        task_id     TEXT NOT NULL,
        config_id   TEXT NOT NULL,
        url         TEXT NOT NULL,
        token       TEXT,
        auth_scheme TEXT,
        credentials TEXT,
        dialect     TEXT NOT NULL,
        created_by  TEXT NOT NULL,
        created_at  TEXT NOT NULL,
        last_state  TEXT,
        UNIQUE (task_id, config_id)
    );
    "#,
    // 13: questions a tool asks the human (QUESTIONS.md §2-§3), and the
    // conversation status `waiting_input`, which A2A shows as
    // `input-required` even while the turn runs (a question on a live MCP
    // session waits inside the running call): the generated task state is
    // rebuilt with it, its index, triggers and counts with it.
    r#"
    CREATE TABLE questions (
        seq          INTEGER PRIMARY KEY AUTOINCREMENT,
        uuid         TEXT NOT NULL UNIQUE,
        conversation_id TEXT NOT NULL,
        message_id   TEXT NOT NULL,
        round        TEXT NOT NULL,
        era          TEXT NOT NULL,
        status       TEXT NOT NULL,
        body         TEXT NOT NULL,
        state        TEXT,
        answered     TEXT,
        action       TEXT,
        content      TEXT,
        asked_at     TEXT NOT NULL,
        expires_at   TEXT,
        answered_by  TEXT,
        answered_via TEXT,
        answered_at  TEXT,
        requested_by TEXT
    );
    CREATE INDEX questions_by_status ON questions(status, seq);
    CREATE INDEX questions_by_call ON questions(message_id, seq);
    CREATE INDEX questions_by_conversation ON questions(conversation_id, status);
    CREATE INDEX questions_by_expiry ON questions(expires_at) WHERE status = 'pending';
    DROP TRIGGER conversations_task_counted;
    DROP TRIGGER conversations_task_recounted;
    DROP TRIGGER conversations_task_uncounted;
    DROP INDEX conversations_by_task_state;
    ALTER TABLE conversations DROP COLUMN task_state;
    ALTER TABLE conversations ADD COLUMN task_state TEXT GENERATED ALWAYS AS (
        CASE
            WHEN status = 'waiting_input' THEN 'input-required'
            WHEN turn_running THEN 'working'
            WHEN status = 'waiting_approval' THEN 'input-required'
            WHEN status = 'failed' THEN 'failed'
            WHEN status = 'cancelled' THEN 'canceled'
            WHEN last_talk IS NULL THEN 'submitted'
            WHEN last_talk = 'assistant' THEN 'completed'
            ELSE 'failed'
        END) VIRTUAL;
    CREATE INDEX conversations_by_task_state ON conversations(task_state, seq);
    DELETE FROM task_counts;
    INSERT INTO task_counts (state, n) SELECT task_state, COUNT(*) FROM conversations GROUP BY task_state;
    CREATE TRIGGER conversations_task_counted AFTER INSERT ON conversations BEGIN
        INSERT INTO task_counts (state, n) VALUES (new.task_state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER conversations_task_recounted AFTER UPDATE ON conversations
    WHEN old.task_state IS NOT new.task_state BEGIN
        UPDATE task_counts SET n = n - 1 WHERE state = old.task_state;
        INSERT INTO task_counts (state, n) VALUES (new.task_state, 1)
            ON CONFLICT (state) DO UPDATE SET n = n + 1;
    END;
    CREATE TRIGGER conversations_task_uncounted AFTER DELETE ON conversations BEGIN
        UPDATE task_counts SET n = n - 1 WHERE state = old.task_state;
    END;
    "#,
    // 14: grants (REACH.md §3), the same text as PostgreSQL's v11.
    include_str!("../grants.sql"),
    // 15: Agent Card pins (signed cards), the same text as PostgreSQL's v12.
    include_str!("../card_pins.sql"),
    // 16: keys the replicas share, the same text as PostgreSQL's v13.
    include_str!("../keys.sql"),
    // 17: approval receipts, the same text as PostgreSQL's v14.
    include_str!("../receipts.sql"),
];

/// The schema version this binary writes.
pub(crate) const CURRENT_VERSION: i64 = MIGRATIONS.len() as i64;

/// Brings `conn` up to [`CURRENT_VERSION`].
pub(crate) fn migrate(conn: &mut Connection, path: &str) -> Result<(), StoreError> {
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

    /// Version 8 fills the list columns and the counts from the rows an
    /// older agent stored.
    #[test]
    fn version_8_backfills_list_columns_and_counts() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..7] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 7).unwrap();
        conn.execute_batch(
            "INSERT INTO conversations (id, session_id, status, created_at, updated_at) VALUES
                 ('a', 's', 'completed', 't', 't'), ('b', 's', 'active', 't', 't'),
                 ('c', 's', 'completed', 't', 't');
             INSERT INTO messages (id, conversation_id, role, content, created_at) VALUES
                 ('m1', 'a', 'user', 'first question', 't'),
                 ('m2', 'a', 'assistant', 'an answer', 't'),
                 ('m3', 'a', 'tool', '', 't');",
        )
        .unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        let row: (i64, String, String, String) = conn
            .query_row(
                "SELECT message_count, title, last_role, last_content FROM conversations WHERE id = 'a'",
                [],
                |r| Ok((r.get(0)?, r.get(1)?, r.get(2)?, r.get(3)?)),
            )
            .unwrap();
        assert_eq!(
            row,
            (
                3,
                "first question".into(),
                "assistant".into(),
                "an answer".into()
            )
        );
        let counts: Vec<(String, i64)> = conn
            .prepare("SELECT status, n FROM status_counts ORDER BY status")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert_eq!(counts, [("active".into(), 1), ("completed".into(), 2)]);
    }

    /// Version 9 derives every stored conversation's task state and counts
    /// them.
    #[test]
    fn version_9_backfills_task_states_and_counts() {
        let mut conn = Connection::open_in_memory().unwrap();
        for sql in &MIGRATIONS[..8] {
            conn.execute_batch(sql).unwrap();
        }
        conn.pragma_update(None, "user_version", 8).unwrap();
        conn.execute_batch(
            "INSERT INTO conversations (id, session_id, status, created_at, updated_at, turn_running) VALUES
                 ('answered', 's', 'completed', 't', 't', 0), ('asked', 's', 'active', 't', 't', 0),
                 ('empty', 's', 'active', 't', 't', 0), ('running', 's', 'active', 't', 't', 1),
                 ('waiting', 's', 'waiting_approval', 't', 't', 0);
             INSERT INTO messages (id, conversation_id, role, content, created_at) VALUES
                 ('m1', 'answered', 'user', 'q', 't'), ('m2', 'answered', 'assistant', 'a', 't'),
                 ('m3', 'answered', 'tool', 'log', 't'), ('m4', 'asked', 'user', 'q', 't'),
                 ('m5', 'asked', 'assistant', '', 't');",
        )
        .unwrap();
        migrate(&mut conn, ":memory:").unwrap();
        let states: Vec<(String, String)> = conn
            .prepare("SELECT id, task_state FROM conversations ORDER BY id")
            .unwrap()
            .query_map([], |r| Ok((r.get(0)?, r.get(1)?)))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        let want = [
            ("answered", "completed"),
            ("asked", "failed"),
            ("empty", "submitted"),
            ("running", "working"),
            ("waiting", "input-required"),
        ];
        assert_eq!(states, want.map(|(a, b)| (a.to_string(), b.to_string())));
        let counts: i64 = conn
            .query_row("SELECT COUNT(*) FROM task_counts WHERE n = 1", [], |r| {
                r.get(0)
            })
            .unwrap();
        assert_eq!(counts, 5);
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
