//! Starting a conversation and sending a message: each runs a turn.

use super::{check_message, must_exist, requester};
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::reply::Reply;
use crate::store::StoredMessage;
use app::models::{Conversation, ConversationStatus, EventKind};

impl Engine {
    /// Creates a conversation; with a first message, runs its first turn.
    pub(crate) async fn start_conversation(
        &self,
        message: Option<String>,
        ctx: CallContext,
    ) -> Result<(Conversation, Option<Reply>), EngineError> {
        self.start_in_context(message, None, ctx).await
    }

    /// [`Engine::start_conversation`] for a new A2A task: the client's
    /// `contextId` (if it named one) is recorded in the transaction that
    /// opens the conversation, so no crash leaves a task outside it.
    pub(crate) async fn start_in_context(
        &self,
        message: Option<String>,
        context_id: Option<String>,
        ctx: CallContext,
    ) -> Result<(Conversation, Option<Reply>), EngineError> {
        let store = &self.inner.store;
        let Some(text) = message else {
            let c = store
                .open_conversation(requester(&ctx, context_id), None)
                .await?;
            self.emit_status(&c.id, Some(c.status), false);
            return Ok((c, None));
        };
        check_message(&text)?;
        self.llm()?;
        // One transaction: the conversation, its first message, the running
        // flag and the turn's lease.
        let (c, lease) = store.open_turn(requester(&ctx, context_id), text).await?;
        self.inner.events.emit(EventKind::MessageAdded, &c.id, |e| {
            e.status = Some(ConversationStatus::Active);
            e.running = Some(true);
        });
        let guard = self.lock_new(&c.id, lease)?;
        // Its one message, as the turn would read it back.
        let first = match c.messages.as_slice() {
            [m] => Some(StoredMessage::of_user(m.clone())),
            _ => None,
        };
        let reply = self
            .run_turn(c.id.clone(), ctx, guard, first, None, None)
            .await?;
        Ok((reply.conversation.clone(), Some(reply)))
    }

    /// Adds a user message to a conversation and runs the turn.
    pub(crate) async fn send_message(
        &self,
        conversation_id: &str,
        text: String,
        ctx: CallContext,
    ) -> Result<Reply, EngineError> {
        check_message(&text)?;
        let store = &self.inner.store;
        // Whether it exists, not the whole conversation: the history of a
        // long one is not read to accept a message (the pending approval
        // is checked in the message's own transaction below).
        must_exist(store, conversation_id).await?;
        let guard = self.lock(conversation_id).await?;
        // A refusal releases the guard here, awaiting the lease's write:
        // dropped, the lease would be released after the answer, and the
        // caller's next request could find it still held.
        let accepted = async {
            if let Err(e) = self.llm() {
                // A waiting approval is the better answer (409 naming it).
                return Err(match store.pending_approval(conversation_id).await? {
                    Some(a) => EngineError::WaitingApproval {
                        conversation_id: conversation_id.to_string(),
                        approval: Box::new(a),
                    },
                    None => e,
                });
            }
            // The pending approval is checked inside the transaction: the
            // authority, with no snapshot read before it.
            let waiting = store
                .add_user_message(conversation_id, requester(&ctx, None), text)
                .await?;
            match waiting {
                Some(crate::store::Waiting::Approval(a)) => {
                    return Err(EngineError::WaitingApproval {
                        conversation_id: conversation_id.to_string(),
                        approval: a,
                    });
                }
                Some(crate::store::Waiting::Question(q)) => {
                    return Err(EngineError::WaitingInput {
                        conversation_id: conversation_id.to_string(),
                        question: q,
                    });
                }
                None => {}
            }
            Ok::<(), EngineError>(())
        }
        .await;
        if let Err(e) = accepted {
            guard.release().await;
            return Err(e);
        }
        self.inner
            .events
            .emit(EventKind::MessageAdded, conversation_id, |e| {
                e.status = Some(ConversationStatus::Active);
                e.running = Some(true);
            });
        self.run_turn(conversation_id.to_string(), ctx, guard, None, None, None)
            .await
    }
}
