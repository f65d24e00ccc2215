//! Questions' intents (QUESTIONS.md §2-§3): store a round before anything
//! is shown, read a conversation's or a round's questions, record an
//! answer (the last of a round resumes the call), relay a proxy's answer,
//! expire the overdue ones. The rows and their rules are in
//! `store/questions.rs`.

use crate::domain::digest::digest;
use crate::domain::ids::{new_id, now};
use crate::store::audit::Event;
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::outbox;
use crate::store::questions::{
    AnswerRecord, Answered, Era, NewQuestion, RELAYED, Round, StoredQuestion, asked, decode, facts,
    row_of,
};
use app::models::{ConversationStatus, QuestionStatus};
use serde_json::Value;

impl Store {
    /// Stores an MRTR round's questions (or a sub-agent's question, `era`
    /// [`Era::Proxy`]) before anything is shown: the call's gate (if any)
    /// is done (`executing` → `executed`: it let the call start, and the
    /// retry is the same approved call), the call is no longer in flight,
    /// and the conversation waits for the answers; one transaction
    /// (QUESTIONS.md §3).
    pub(crate) async fn ask_round(
        &self,
        questions: Vec<NewQuestion>,
        shared: Round,
        approval_uuid: Option<String>,
        era: Era,
    ) -> Result<Vec<StoredQuestion>, StoreError> {
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            let Some(first) = questions.first() else {
                return Ok(Vec::new());
            };
            let (id, mid) = (first.conversation_id.clone(), first.message_id.clone());
            tx.fence(&id)?;
            if let Some(uuid) = &approval_uuid {
                tx.transition(
                    uuid,
                    &[app::models::ApprovalStatus::Executing],
                    app::models::ApprovalStatus::Executed,
                    None,
                    None,
                )?;
            }
            tx.clear_started(&mid)?;
            let round = new_id();
            let mut stored = Vec::new();
            for q in &questions {
                let mut row = row_of(q, era, &round, &shared);
                row.requested_by = tx.insert_question(&row)?;
                let q = decode(row)?;
                asked(tx, &routes, &q)?;
                stored.push(q);
            }
            tx.set_status(&id, ConversationStatus::WaitingInput)?;
            tx.set_turn_running(&id, false)?;
            Ok(stored)
        })
        .await
    }

    /// Stores a question asked on a live session; the call stays in flight
    /// and the conversation shows that it waits.
    pub(crate) async fn ask_live(&self, q: NewQuestion) -> Result<StoredQuestion, StoreError> {
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            tx.fence(&q.conversation_id)?;
            let mut row = row_of(&q, Era::Session, &new_id(), &Round::default());
            row.requested_by = tx.insert_question(&row)?;
            let stored = decode(row)?;
            asked(tx, &routes, &stored)?;
            tx.set_status(&q.conversation_id, ConversationStatus::WaitingInput)?;
            Ok(stored)
        })
        .await
    }

    /// Records an answer (audited with a digest of the content, never the
    /// content itself). The last open question of a round marks the turn
    /// running (the caller resumes it); the last of a live session's puts
    /// the conversation back to `active` (its turn still runs).
    pub(crate) async fn answer_question(&self, a: AnswerRecord) -> Result<Answered, StoreError> {
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            let Some(row) = tx.question(&a.uuid)? else {
                return Ok(Answered::Missing);
            };
            let q = decode(row)?;
            if q.question.status != QuestionStatus::Pending {
                return Ok(Answered::Lost(q.question.status));
            }
            let content = a
                .content
                .as_ref()
                .map(|c| Value::Object(c.clone()).to_string());
            if !tx.answer_question(
                &a.uuid,
                a.status.as_str(),
                &a.action,
                content.as_deref(),
                &a.by,
                a.via.as_str(),
            )? {
                return Ok(Answered::Lost(QuestionStatus::Answered));
            }
            let id = &q.question.conversation_id;
            if a.status == QuestionStatus::Expired {
                outbox::announce_question(tx, &routes, "question.expired", facts(&q))?;
            }
            tx.audit(&Event {
                actor: &a.by,
                event: if a.status == QuestionStatus::Expired {
                    "question.expired"
                } else {
                    "question.answered"
                },
                conversation_id: Some(id),
                approval_uuid: None,
                details: serde_json::json!({
                    "question": a.uuid,
                    "action": a.action,
                    "via": a.via,
                    "content_digest": a.content.as_ref().map(|c| digest(&Value::Object(c.clone()))),
                }),
            })?;
            let open = tx
                .questions_of_call(&q.message_id)?
                .into_iter()
                .any(|r| r.round == q.round && r.status == QuestionStatus::Pending.as_str());
            if open {
                return Ok(Answered::Done { resume: false });
            }
            tx.set_status(id, ConversationStatus::Active)?;
            if q.era.rests() {
                tx.set_turn_running(id, true)?;
                Ok(Answered::Done { resume: true })
            } else {
                Ok(Answered::Done { resume: false })
            }
        })
        .await
    }

    /// Marks a call started to send a proxy question's answer on (the
    /// write-ahead of a delegation): false when it was sent already.
    pub(crate) async fn claim_relay(
        &self,
        conversation_id: &str,
        message_id: &str,
        uuid: &str,
    ) -> Result<bool, StoreError> {
        let (id, mid, uuid) = (
            conversation_id.to_string(),
            message_id.to_string(),
            uuid.to_string(),
        );
        self.write(move |tx| {
            tx.fence(&id)?;
            if !tx.set_question_state(&uuid, RELAYED)? {
                return Ok(false);
            }
            tx.mark_started(&mid)?;
            Ok(true)
        })
        .await
    }

    /// One question.
    pub(crate) async fn question(&self, uuid: &str) -> Result<Option<StoredQuestion>, StoreError> {
        let uuid = uuid.to_string();
        self.read_one(move |tx| tx.question(&uuid)?.map(decode).transpose())
            .await
    }

    /// The newest round of a call's questions (empty: it asked none).
    pub(crate) async fn latest_round(
        &self,
        message_id: &str,
    ) -> Result<Vec<StoredQuestion>, StoreError> {
        let mid = message_id.to_string();
        self.read_one(move |tx| {
            let rows = tx.questions_of_call(&mid)?;
            let Some(last) = rows.last().map(|r| r.round.clone()) else {
                return Ok(Vec::new());
            };
            rows.into_iter()
                .filter(|r| r.round == last)
                .map(decode)
                .collect()
        })
        .await
    }

    /// Pending questions, oldest first, after `after` (a cursor: the last
    /// question of the previous page), with the count of all pending.
    pub(crate) async fn pending_questions(
        &self,
        after: Option<String>,
        limit: u32,
    ) -> Result<Option<(Vec<StoredQuestion>, u64)>, StoreError> {
        self.read(move |tx| {
            let after_seq = match &after {
                Some(uuid) => match tx.question(uuid)? {
                    Some(r) => Some(r.seq),
                    None => return Ok(None),
                },
                None => None,
            };
            let rows = tx.pending_questions(after_seq, limit)?;
            let total = tx.count_pending_questions()?;
            Ok(Some((
                rows.into_iter().map(decode).collect::<Result<_, _>>()?,
                total,
            )))
        })
        .await
    }

    /// The pending question of a conversation, if one waits.
    pub(crate) async fn pending_question_of(
        &self,
        conversation_id: &str,
    ) -> Result<Option<StoredQuestion>, StoreError> {
        let id = conversation_id.to_string();
        self.read_one(move |tx| {
            tx.pending_questions_of(&id)?
                .into_iter()
                .next()
                .map(decode)
                .transpose()
        })
        .await
    }

    /// Questions past their expiry, oldest first.
    pub(crate) async fn due_questions(
        &self,
        limit: u32,
    ) -> Result<Vec<StoredQuestion>, StoreError> {
        self.read(move |tx| {
            tx.due_questions(&now(), limit)?
                .into_iter()
                .map(decode)
                .collect()
        })
        .await
    }
}
