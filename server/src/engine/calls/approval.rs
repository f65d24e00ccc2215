//! Storing a pending approval: in simple mode the conversation pauses in
//! the same transaction; the event is published after the commit.

use super::site::CallSite;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::store::Settle;
use crate::store::approvals::NewApproval;
use app::models::{ConversationStatus, EventKind, PendingApproval};

impl Engine {
    /// Stores a pending approval and publishes it. In simple mode the
    /// conversation pauses in the same transaction; a pipeline pauses once
    /// every branch has stopped. `settle` runs in that transaction too (a
    /// proxy approval marks the delegation step done there).
    pub(super) async fn request_approval(
        &self,
        site: CallSite<'_>,
        new: NewApproval,
        settle: Option<Settle>,
    ) -> Result<PendingApproval, EngineError> {
        let (conversation_id, scope) = (site.conversation_id, site.scope);
        let owns = scope.owns_status();
        let tool = new.tool_name.clone();
        let created = self.inner.store.request_approval(new, owns, settle).await?;
        tracing::info!(conversation = %conversation_id, approval = %created.approval.uuid, tool = %tool, remote = created.approval.remote_agent_name.as_deref().unwrap_or("-"), "approval requested");
        self.inner
            .events
            .emit(EventKind::ApprovalRequested, conversation_id, |e| {
                e.status = Some(ConversationStatus::WaitingApproval);
                e.running = Some(!owns);
                e.tool = Some(tool.clone());
                e.approval = Some(created.approval.uuid.clone());
                e.node = scope.node_name();
            });
        Ok(created.approval)
    }
}
