//! The engine's public commands: starting a conversation and sending a
//! message (`send`), deciding an approval (`decide`), answering a
//! question (`answer`), cancelling (`cancel`), resolving a call left in
//! doubt (`resolve`); and the helpers they share.

mod access;
pub(crate) mod answer;
mod cancel;
pub(super) mod decide;
pub(crate) mod resolve;
mod send;
mod sign_out;

use crate::domain::tools::CallContext;

use crate::engine::handle::Engine;

use crate::engine::error::EngineError;
use crate::store::approvals::Decider;
use crate::store::{Requester, Store};
use app::models::Conversation;

/// Reads a conversation or says it does not exist.
pub(crate) async fn load(store: &Store, id: &str) -> Result<Conversation, EngineError> {
    store
        .get_conversation(id.to_string())
        .await?
        .ok_or_else(|| not_found(id))
}

/// `Ok` when the conversation exists: one indexed read, no history.
async fn must_exist(store: &Store, id: &str) -> Result<(), EngineError> {
    match store.conversation_exists(id).await? {
        true => Ok(()),
        false => Err(not_found(id)),
    }
}

fn not_found(id: &str) -> EngineError {
    EngineError::NotFound(format!("conversation {id:?} not found"))
}

impl Engine {
    /// Takes the conversation's lock, stopping its running turn first: its
    /// switch is tripped here, or the replica running it is asked through
    /// the store (its heartbeat sees it). Waits for the turn to let go for
    /// up to a lease and ten seconds (a tool that started finishes).
    async fn stop_turn(
        &self,
        conversation_id: &str,
    ) -> Result<crate::engine::locks::LockGuard, EngineError> {
        let wait = std::time::Duration::from_secs(self.inner.config.store.lease_seconds + 10);
        let deadline = tokio::time::Instant::now() + wait;
        let mut asked = false;
        loop {
            match self.lock(conversation_id).await {
                Err(EngineError::Busy(_)) if tokio::time::Instant::now() < deadline => {
                    if !self.inner.turns.cancel(conversation_id)
                        && !asked
                        && self.inner.store.shared()
                    {
                        asked = self.inner.store.request_cancel(conversation_id).await?;
                    }
                    tokio::time::sleep(std::time::Duration::from_millis(50)).await;
                }
                out => return out,
            }
        }
    }
}

/// Who asks, as the conversation records it.
fn requester(ctx: &CallContext, context_id: Option<String>) -> Requester {
    Requester {
        name: ctx.principal.name.clone(),
        session: ctx.session_id.clone(),
        message_id: ctx.message_id.clone(),
        context_id,
    }
}

/// Who is deciding, as the approval row records it.
fn decider(ctx: &CallContext) -> Decider {
    Decider {
        name: ctx.principal.name.clone(),
        via: ctx.via,
        session: ctx.session_id.clone(),
    }
}

fn check_message(text: &str) -> Result<(), EngineError> {
    if text.trim().is_empty() {
        return Err(EngineError::Invalid(
            "\"message\" is empty: send the text for the agent".into(),
        ));
    }
    // PostgreSQL's text cannot hold it, so neither backend takes it.
    if text.contains('\0') {
        return Err(EngineError::Invalid(
            "\"message\" contains the NUL character (U+0000), which cannot be stored".into(),
        ));
    }
    Ok(())
}
