//! Cancelling a conversation (A2A `CancelTask`), and whether a turn of it
//! runs.

use super::{decider, load, must_exist};
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use app::models::{Conversation, ConversationStatus};

impl Engine {
    /// True while a turn or a decision of the conversation runs.
    pub(crate) fn is_busy(&self, conversation_id: &str) -> bool {
        self.inner.locks.is_locked(conversation_id)
    }

    /// True while a turn of `c` runs: here (the lock), or as the snapshot's
    /// own running flag says (on another replica; or here, read before the
    /// turn ended: a snapshot with the user's message and a lock released
    /// since would otherwise look failed, which a push watcher took for
    /// the task's end on both backends).
    pub(crate) fn runs(&self, c: &Conversation) -> bool {
        self.is_busy(&c.id) || c.running
    }

    /// Cancels a conversation (A2A `CancelTask`): a running turn is
    /// stopped first (on whichever replica runs it), every waiting action
    /// is cancelled and never runs, remote tasks a proxy approval waited on
    /// are cancelled too, a pipeline run stops, and the conversation is
    /// `cancelled` until a new message opens it again. Busy if the turn
    /// does not stop in time (a long tool call).
    pub(crate) async fn cancel(
        &self,
        conversation_id: &str,
        ctx: CallContext,
    ) -> Result<Conversation, EngineError> {
        let store = &self.inner.store;
        must_exist(store, conversation_id).await?;
        let guard = self.stop_turn(conversation_id).await?;
        let by = ctx.session_id.clone();
        let note = move |n: usize| {
            if n == 0 {
                format!("Cancelled by session {by}.")
            } else {
                format!("Cancelled by session {by}; {n} waiting action(s) were not run.")
            }
        };
        let (cancelled, remote) = match store
            .cancel_conversation(conversation_id, decider(&ctx), note)
            .await
        {
            Ok(done) => done,
            Err(e) => {
                guard.release().await;
                return Err(e.into());
            }
        };
        tracing::info!(conversation = %conversation_id, cancelled_actions = cancelled, "conversation cancelled");
        crate::telemetry::metrics::get().approvals_ended("cancelled", cancelled as u64);
        // The remote tasks that waited with us are cancelled too (down the
        // chain), best effort: a remote that cannot be reached is logged.
        for (agent, task) in remote {
            let Some(url) = self.sub_agent_url(&agent) else {
                tracing::warn!(agent = %agent, "cannot cancel the remote task: the sub-agent is no longer configured");
                continue;
            };
            let agent_ctx = self.ctx_for_agent(&agent, &ctx);
            let mut sent = self.inner.a2a.cancel(&url, &task, &agent_ctx).await;
            if self.note_card(&agent, &url, sent.as_ref().err()).await {
                sent = self.inner.a2a.cancel(&url, &task, &agent_ctx).await;
            }
            match sent {
                Ok(()) => tracing::info!(agent = %agent, task = %task, "remote task cancelled"),
                Err(e) => {
                    tracing::warn!(agent = %agent, task = %task, error = %e, "could not cancel the remote task")
                }
            }
        }
        guard.release().await;
        self.emit_status(conversation_id, Some(ConversationStatus::Cancelled), false);
        load(store, conversation_id).await
    }
}
