//! Questions on PostgreSQL: the statements of [`QuestionTx`] on a [`PgTx`].

use super::tx::PgTx;
use crate::domain::ids::now;
use crate::store::error::StoreError;
use crate::store::questions::QuestionRow;
use crate::store::tx::QuestionTx;
use postgres::Row;

const COLUMNS: &str = "seq, uuid, conversation_id, message_id, round, era, status, body, state, answered, \
     action, content, asked_at, expires_at, answered_by, answered_via, answered_at, requested_by";

fn row(r: &Row) -> QuestionRow {
    QuestionRow {
        seq: r.get(0),
        uuid: r.get(1),
        conversation_id: r.get(2),
        message_id: r.get(3),
        round: r.get(4),
        era: r.get(5),
        status: r.get(6),
        body: r.get(7),
        state: r.get(8),
        answered: r.get(9),
        action: r.get(10),
        content: r.get(11),
        asked_at: r.get(12),
        expires_at: r.get(13),
        answered_by: r.get(14),
        answered_via: r.get(15),
        answered_at: r.get(16),
        requested_by: r.get(17),
    }
}

impl PgTx<'_> {
    fn questions_where(
        &self,
        clause: &str,
        params: super::tx::Params<'_>,
    ) -> Result<Vec<QuestionRow>, StoreError> {
        let sql = format!("SELECT {COLUMNS} FROM questions WHERE {clause}");
        Ok(self.query(&sql, params)?.iter().map(row).collect())
    }
}

impl QuestionTx for PgTx<'_> {
    fn insert_question(&self, q: &QuestionRow) -> Result<Option<String>, StoreError> {
        Ok(self
            .first(
                "INSERT INTO questions (uuid, conversation_id, message_id, round, era, status, body, state, answered, \
                 asked_at, expires_at, requested_by) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, \
                 (SELECT COALESCE(requested_by, 'anonymous') FROM conversations WHERE id = $2)) \
                 RETURNING requested_by",
                &[
                    &q.uuid,
                    &q.conversation_id,
                    &q.message_id,
                    &q.round,
                    &q.era,
                    &q.status,
                    &q.body,
                    &q.state,
                    &q.answered,
                    &q.asked_at,
                    &q.expires_at,
                ],
            )?
            .and_then(|r| r.get(0)))
    }
    fn question(&self, uuid: &str) -> Result<Option<QuestionRow>, StoreError> {
        Ok(self
            .questions_where("uuid = $1", &[&uuid])?
            .into_iter()
            .next())
    }
    fn questions_of_call(&self, message_id: &str) -> Result<Vec<QuestionRow>, StoreError> {
        self.questions_where("message_id = $1 ORDER BY seq", &[&message_id])
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
        Ok(self.exec(
            "UPDATE questions SET status = $2, action = $3, content = $4, answered_by = $5, \
             answered_via = $6, answered_at = $7 WHERE uuid = $1 AND status = 'pending'",
            &[&uuid, &status, &action, &content, &by, &via, &now()],
        )? == 1)
    }
    fn set_question_state(&self, uuid: &str, state: &str) -> Result<bool, StoreError> {
        Ok(self.exec(
            "UPDATE questions SET state = $2 WHERE uuid = $1 AND state IS NULL",
            &[&uuid, &state],
        )? == 1)
    }
    fn pending_questions(
        &self,
        after_seq: Option<i64>,
        limit: u32,
    ) -> Result<Vec<QuestionRow>, StoreError> {
        self.questions_where(
            "status = 'pending' AND seq > $1 ORDER BY seq LIMIT $2",
            &[&after_seq.unwrap_or(0), &i64::from(limit)],
        )
    }
    fn count_pending_questions(&self) -> Result<u64, StoreError> {
        let n: i64 = self
            .first(
                "SELECT COUNT(*) FROM questions WHERE status = 'pending'",
                &[],
            )?
            .map(|r| r.get(0))
            .unwrap_or(0);
        Ok(n.max(0) as u64)
    }
    fn pending_questions_of(&self, conversation_id: &str) -> Result<Vec<QuestionRow>, StoreError> {
        self.questions_where(
            "conversation_id = $1 AND status = 'pending' ORDER BY seq",
            &[&conversation_id],
        )
    }
    fn due_questions(&self, now: &str, limit: u32) -> Result<Vec<QuestionRow>, StoreError> {
        self.questions_where(
            "status = 'pending' AND expires_at IS NOT NULL AND expires_at <= $1 ORDER BY expires_at LIMIT $2",
            &[&now, &i64::from(limit)],
        )
    }
}
