//! Questions on SQLite: the statements of [`QuestionTx`].

use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::questions::QuestionRow;
use crate::store::tx::QuestionTx;
use rusqlite::{Connection, OptionalExtension, Row, params};

const COLUMNS: &str = "seq, uuid, conversation_id, message_id, round, era, status, body, state, answered, \
     action, content, asked_at, expires_at, answered_by, answered_via, answered_at, requested_by";

fn row(r: &Row<'_>) -> rusqlite::Result<QuestionRow> {
    Ok(QuestionRow {
        seq: r.get(0)?,
        uuid: r.get(1)?,
        conversation_id: r.get(2)?,
        message_id: r.get(3)?,
        round: r.get(4)?,
        era: r.get(5)?,
        status: r.get(6)?,
        body: r.get(7)?,
        state: r.get(8)?,
        answered: r.get(9)?,
        action: r.get(10)?,
        content: r.get(11)?,
        asked_at: r.get(12)?,
        expires_at: r.get(13)?,
        answered_by: r.get(14)?,
        answered_via: r.get(15)?,
        answered_at: r.get(16)?,
        requested_by: r.get(17)?,
    })
}

fn rows(
    conn: &Connection,
    clause: &str,
    params: impl rusqlite::Params,
) -> Result<Vec<QuestionRow>, StoreError> {
    let mut stmt =
        conn.prepare_cached(&format!("SELECT {COLUMNS} FROM questions WHERE {clause}"))?;
    let found = stmt.query_map(params, row)?.collect::<Result<_, _>>()?;
    Ok(found)
}

impl QuestionTx for Connection {
    fn insert_question(&self, q: &QuestionRow) -> Result<Option<String>, StoreError> {
        let by = self
            .prepare_cached(
                "INSERT INTO questions (uuid, conversation_id, message_id, round, era, status, body, state, answered, \
                 asked_at, expires_at, requested_by) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, \
                 (SELECT COALESCE(requested_by, 'anonymous') FROM conversations WHERE id = ?2)) \
                 RETURNING requested_by",
            )?
            .query_row(
                params![
                    q.uuid,
                    q.conversation_id,
                    q.message_id,
                    q.round,
                    q.era,
                    q.status,
                    q.body,
                    q.state,
                    q.answered,
                    q.asked_at,
                    q.expires_at
                ],
                |r| r.get(0),
            )?;
        Ok(by)
    }
    fn question(&self, uuid: &str) -> Result<Option<QuestionRow>, StoreError> {
        Ok(self
            .prepare_cached(&format!("SELECT {COLUMNS} FROM questions WHERE uuid = ?1"))?
            .query_row([uuid], row)
            .optional()?)
    }
    fn questions_of_call(&self, message_id: &str) -> Result<Vec<QuestionRow>, StoreError> {
        rows(self, "message_id = ?1 ORDER BY seq", [message_id])
    }
    fn answer_question(
        &self,
        uuid: &str,
        status: &str,
        action: &str,
        content: Option<&str>,
        by: &str,
        via: &str,
    ) -> Result<bool, StoreError> {
        let n = self
            .prepare_cached(
                "UPDATE questions SET status = ?2, action = ?3, content = ?4, answered_by = ?5, \
                 answered_via = ?6, answered_at = ?7 WHERE uuid = ?1 AND status = 'pending'",
            )?
            .execute(params![uuid, status, action, content, by, via, now()])?;
        Ok(n == 1)
    }
    fn set_question_state(&self, uuid: &str, state: &str) -> Result<bool, StoreError> {
        let n = self
            .prepare_cached("UPDATE questions SET state = ?2 WHERE uuid = ?1 AND state IS NULL")?
            .execute(params![uuid, state])?;
        Ok(n == 1)
    }
    fn pending_questions(
        &self,
        after_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<QuestionRow>, StoreError> {
        rows(
            self,
            "status = 'pending' AND seq > ?1 ORDER BY seq LIMIT ?2",
            params![after_seq.unwrap_or(0), limit],
        )
    }
    fn count_pending_questions(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .prepare_cached("SELECT COUNT(*) FROM questions WHERE status = 'pending'")?
            .query_row([], |r| r.get(0))?;
        Ok(n.max(0) as u64)
    }
    fn pending_questions_of(&self, conversation_id: &str) -> Result<Vec<QuestionRow>, StoreError> {
        rows(
            self,
            "conversation_id = ?1 AND status = 'pending' ORDER BY seq",
            [conversation_id],
        )
    }
    fn due_questions(&self, now: &str, limit: u32) -> Result<Vec<QuestionRow>, StoreError> {
        rows(
            self,
            "status = 'pending' AND expires_at IS NOT NULL AND expires_at <= ?1 ORDER BY expires_at LIMIT ?2",
            params![now, limit],
        )
    }
}
