//! A turn's steps, each one transaction: open a conversation or add a
//! user's message (the running flag set with it), record a model step,
//! notes, pipeline snapshots, and the ways a turn stops (ended, paused
//! for an operator, failed).

use super::error::StoreError;
use super::facade::Store;
use super::messages::NewMessage;
use super::messages::StoredMessage;
use super::tx::Tx;
use app::models::{Conversation, ConversationStatus, PendingApproval, Role};
use app::pipeline::PipelineState;

/// Who asks: a principal's name and the session it acts in.
#[derive(Clone, Debug)]
pub(crate) struct Requester {
    pub(crate) name: String,
    pub(crate) session: String,
    /// The id the client gave the user's message (A2A `messageId`).
    pub(crate) message_id: Option<String>,
    /// The A2A `contextId` a client named for a new task, recorded in the
    /// transaction that opens the conversation.
    pub(crate) context_id: Option<String>,
}

/// What a conversation waits for, which a new message may not skip.
#[derive(Clone, Debug)]
pub(crate) enum Waiting {
    Approval(Box<PendingApproval>),
    Question(Box<app::models::Question>),
}

/// What [`Store::record_step`] wrote.
#[derive(Clone, Debug)]
pub(crate) struct Recorded {
    /// With `end_turn`: the conversation as the step left it.
    pub(crate) conversation: Option<Conversation>,
    /// The step's messages as stored (ids, times, and the results of calls
    /// that could not run), in order: what a read of the conversation's
    /// messages would now end with, so the turn loop need not read them.
    pub(crate) messages: Vec<StoredMessage>,
}

/// One message of a model step, with the result of a call that cannot run
/// (bad arguments, unknown tool), written in the same transaction.
#[derive(Clone, Debug)]
pub(crate) struct StepMessage {
    pub(crate) message: NewMessage,
    /// `(text, is_error)`.
    pub(crate) immediate: Option<(String, bool)>,
}

impl Store {
    /// Creates a conversation (audited as `conversation.created`); with a
    /// first message, adds it (`message.sent`) and marks the turn running.
    /// The conversation is returned as committed, its message included.
    pub(crate) async fn open_conversation(
        &self,
        by: Requester,
        first: Option<String>,
    ) -> Result<Conversation, StoreError> {
        self.write(move |tx| open(tx, &by, first)).await
    }

    /// [`Store::open_conversation`] with a first message, and the lease of
    /// its turn taken in the same transaction (on PostgreSQL one round trip
    /// less than claiming it afterwards, and no moment where the turn runs
    /// without one).
    pub(crate) async fn open_turn(
        &self,
        by: Requester,
        first: String,
    ) -> Result<(Conversation, super::leases::Lease), StoreError> {
        let (c, epoch) = self
            .write(move |tx| {
                let c = open(tx, &by, Some(first))?;
                let epoch = tx.lease_new(&c.id)?;
                Ok((c, epoch))
            })
            .await?;
        let lease = self.adopt_lease(&c.id, epoch);
        Ok((c, lease))
    }

    /// Adds a user's message and marks the turn running, unless an
    /// approval waits: then nothing is written and it is returned (the
    /// pending approval is the authority, checked in the transaction).
    pub(crate) async fn add_user_message(
        &self,
        id: &str,
        by: Requester,
        text: String,
    ) -> Result<Option<Waiting>, StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            if let Some(a) = tx.pending_for(&id)? {
                return Ok(Some(Waiting::Approval(Box::new(a))));
            }
            if let Some(q) = tx.pending_questions_of(&id)?.into_iter().next() {
                let q = super::questions::decode(q)?;
                return Ok(Some(Waiting::Question(Box::new(q.question))));
            }
            tx.set_requester(&id, &by.name, &by.session)?;
            let m = tx.append(&id, NewMessage::user(text, by.message_id.clone()))?;
            super::audit::message_sent(tx, &by.name, &id, m.as_ref().map(|m| m.id.as_str()))?;
            tx.set_status(&id, ConversationStatus::Active)?;
            tx.set_turn_running(&id, true)?;
            Ok(None)
        })
        .await
    }

    /// Stores one model step, and returns its messages as stored (the turn
    /// loop goes on from them without a read). With `end_turn`, the running
    /// flag is cleared in the same transaction and the conversation as it
    /// left it is returned too (the turn's reply needs no read of its own).
    pub(crate) async fn record_step(
        &self,
        id: &str,
        step: Vec<StepMessage>,
        end_turn: bool,
    ) -> Result<Recorded, StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            let mut written = Vec::with_capacity(step.len());
            // With `end_turn`, the last message ends the turn as it is
            // written (one row update on PostgreSQL).
            let ending = if end_turn {
                step.len().checked_sub(1)
            } else {
                None
            };
            for (i, StepMessage { message, immediate }) in step.into_iter().enumerate() {
                let (call_id, step, signature) = (
                    message.call_id.clone(),
                    message.step.clone(),
                    message.signature.clone(),
                );
                let node_run = message.node.as_ref().map(|t| t.run.clone());
                let mut stored = if ending == Some(i) {
                    tx.append_ending(&id, message)?
                } else {
                    super::tx::append_existing(tx, &id, message)?
                };
                let mut finished_at = None;
                if let Some((text, is_error)) = immediate {
                    tx.set_result(&stored.id, &text, is_error)?;
                    if let Some(call) = stored.tool_call.as_mut() {
                        call.result = Some(text);
                        call.is_error = Some(is_error);
                    }
                    finished_at = Some(crate::domain::ids::now());
                }
                written.push(StoredMessage {
                    message: stored,
                    call_id,
                    step,
                    signature,
                    started_at: None,
                    finished_at,
                    node_run,
                });
            }
            let conversation = if end_turn {
                if ending.is_none() {
                    tx.set_turn_running(&id, false)?;
                }
                // The turn's last write: its lease goes back with it.
                tx.release_lease(&id)?;
                tx.conversation(&id)?
            } else {
                None
            };
            Ok(Recorded {
                conversation,
                messages: written,
            })
        })
        .await
    }

    /// Appends a note (a system message); with `end_turn`, the turn stops.
    pub(crate) async fn add_note(
        &self,
        id: &str,
        note: NewMessage,
        end_turn: bool,
    ) -> Result<(), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            tx.append(&id, note)?;
            if end_turn {
                tx.set_turn_running(&id, false)?;
            }
            Ok(())
        })
        .await
    }

    /// The turn is over (its reply is written).
    pub(crate) async fn end_turn(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            tx.set_turn_running(&id, false)
        })
        .await
    }

    /// The turn stops until an operator decides.
    pub(crate) async fn pause_turn(&self, id: &str) -> Result<(), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            tx.set_status(&id, ConversationStatus::WaitingApproval)?;
            tx.set_turn_running(&id, false)
        })
        .await
    }

    /// The turn failed: `note` says why and the conversation is `failed`.
    pub(crate) async fn fail_turn(&self, id: &str, note: NewMessage) -> Result<(), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            tx.append(&id, note)?;
            tx.set_status(&id, ConversationStatus::Failed)?;
            Ok(())
        })
        .await
    }

    /// Stores a pipeline run's state, with `note` appended in the same
    /// transaction.
    pub(crate) async fn save_pipeline(
        &self,
        id: &str,
        state: PipelineState,
        note: Option<NewMessage>,
    ) -> Result<(), StoreError> {
        let id = id.to_string();
        self.write(move |tx| {
            tx.fence(&id)?;
            tx.set_pipeline_state(&id, &state)?;
            if let Some(m) = note {
                tx.append(&id, m)?;
            }
            Ok(())
        })
        .await
    }

    /// Every message of a conversation with its hidden columns, oldest
    /// first.
    pub(crate) async fn messages(&self, id: &str) -> Result<Vec<StoredMessage>, StoreError> {
        let id = id.to_string();
        self.read_one(move |tx| tx.messages(&id)).await
    }

    /// The messages and the pipeline run state, from one snapshot.
    pub(crate) async fn messages_and_run(
        &self,
        id: &str,
    ) -> Result<(Vec<StoredMessage>, Option<PipelineState>), StoreError> {
        let id = id.to_string();
        self.read(move |tx| Ok((tx.messages(&id)?, tx.pipeline_state(&id)?)))
            .await
    }

    /// The pipeline run state and the id of the last user message (the
    /// current turn), from one snapshot; no message is read when the
    /// conversation never ran a pipeline.
    pub(crate) async fn run_and_turn(
        &self,
        id: &str,
    ) -> Result<(Option<PipelineState>, Option<String>), StoreError> {
        let id = id.to_string();
        // Most conversations never ran a pipeline: one statement says so.
        let probe = id.clone();
        if self
            .read_one(move |tx| tx.pipeline_state(&probe))
            .await?
            .is_none()
        {
            return Ok((None, None));
        }
        self.read(move |tx| {
            let Some(ps) = tx.pipeline_state(&id)? else {
                return Ok((None, None));
            };
            let turn = last_user_message(tx, &id)?.map(|m| m.message.id);
            Ok((Some(ps), turn))
        })
        .await
    }

    /// The text of the last user message (empty when there is none).
    pub(crate) async fn last_user_text(&self, id: &str) -> Result<String, StoreError> {
        let id = id.to_string();
        self.read_one(move |tx| {
            Ok(last_user_message(tx, &id)?
                .map(|m| m.message.content)
                .unwrap_or_default())
        })
        .await
    }
}

fn last_user_message(tx: &dyn Tx, id: &str) -> Result<Option<StoredMessage>, StoreError> {
    Ok(tx
        .messages(id)?
        .into_iter()
        .rev()
        .find(|m| m.message.role == Role::User))
}

/// Creates a conversation, with its first message and the running flag
/// when there is one.
fn open(tx: &dyn Tx, by: &Requester, first: Option<String>) -> Result<Conversation, StoreError> {
    let Some(text) = first else {
        let c = tx.insert_conversation(&by.session)?;
        tx.set_requester(&c.id, &by.name, &by.session)?;
        if let Some(context) = &by.context_id {
            tx.set_context(&c.id, context)?;
        }
        super::audit::conversation_created(tx, &by.name, &c.id, &by.session)?;
        return Ok(c);
    };
    let first = NewMessage::user(text, by.message_id.clone());
    let (mut c, m) = tx.insert_with_message(&by.session, &by.name, first)?;
    if let Some(context) = &by.context_id {
        tx.set_context(&c.id, context)?;
    }
    super::audit::conversation_created(tx, &by.name, &c.id, &by.session)?;
    super::audit::message_sent(tx, &by.name, &c.id, Some(&m.id))?;
    c.updated_at = m.created_at.clone();
    c.messages.push(m);
    Ok(c)
}
