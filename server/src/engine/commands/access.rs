//! Who may go on with a conversation from a client that names it (an MCP
//! caller's `conversation_id`, an AG-UI `threadId`), and reading one once
//! its turn has settled. Shared by every client edge, so each answers
//! another principal's conversation exactly like a missing one.

use crate::config::AuthMode;
use crate::domain::principal::Role;
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use app::models::Conversation;
use std::time::Duration;

/// How long a client's read waits for a turn decided elsewhere to end.
const SETTLE_WAIT: Duration = Duration::from_secs(30);

impl Engine {
    /// Refuses a conversation the caller may not continue with the same
    /// answer as one that does not exist (nothing leaks): it is theirs, or
    /// they are an admin, or nobody signs in.
    pub(crate) async fn may_continue(
        &self,
        id: &str,
        ctx: &CallContext,
    ) -> Result<(), EngineError> {
        let missing = || EngineError::NotFound(format!("conversation {id:?} not found"));
        let store = self.store();
        if !store.conversation_exists(id).await? {
            return Err(missing());
        }
        let p = &ctx.principal;
        if self.inner.config.auth.mode == AuthMode::None || p.allow(Role::Admin) {
            return Ok(());
        }
        match store.created_by(id).await? {
            Some(owner) if owner == p.name => Ok(()),
            _ => Err(missing()),
        }
    }

    /// The conversation once no turn runs on it (or after
    /// [`SETTLE_WAIT`], as it is then).
    pub(crate) async fn settled(&self, id: &str) -> Result<Conversation, EngineError> {
        let deadline = tokio::time::Instant::now() + SETTLE_WAIT;
        loop {
            let c = super::load(self.store(), id).await?;
            if !c.running || tokio::time::Instant::now() >= deadline {
                return Ok(c);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    }
}
