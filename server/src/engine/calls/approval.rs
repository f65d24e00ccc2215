//! Storing a pending approval: in simple mode the conversation pauses in
//! the same transaction; the event is published after the commit.

use super::outcome::CallOutcome;
use super::site::CallSite;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::store::HandedOver;
use crate::store::approvals::NewApproval;
use app::models::{ConversationStatus, EventKind, PendingApproval};
use std::time::Duration;

/// What a rule that asks says: the rule's name, who may decide, the votes
/// needed and how long it may wait (`Gate::Ask`'s fields).
pub(super) type Ask = (String, Vec<String>, u32, Option<Duration>);

impl Engine {
    /// Stores a pending approval and publishes it. In simple mode the
    /// conversation pauses in the same transaction; a pipeline pauses once
    /// every branch has stopped. the delegation it takes over settles in that transaction too (a
    /// proxy approval marks the delegation step done there: `handed_over`).
    pub(super) async fn request_approval(
        &self,
        site: CallSite<'_>,
        new: NewApproval,
        handed_over: Option<HandedOver>,
    ) -> Result<PendingApproval, EngineError> {
        let (conversation_id, scope) = (site.conversation_id, site.scope);
        let owns = scope.owns_status();
        let tool = new.tool_name.clone();
        let created = self
            .inner
            .store
            .request_approval(new, owns, handed_over)
            .await?;
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

    /// Asks for an approval of the site's call, described as
    /// `description`, under the rule that asks, and pauses on it.
    pub(super) async fn ask(
        &self,
        site: CallSite<'_>,
        (rule, approvers, quorum, expires_in): Ask,
        description: String,
    ) -> Result<CallOutcome, EngineError> {
        let tc = site.tc;
        let new = NewApproval {
            conversation_id: site.conversation_id.to_string(),
            message_id: site.message_id.to_string(),
            tool_name: tc.name.clone(),
            server: tc.server.clone(),
            tool_args: tc.arguments.clone(),
            description,
            remote: None,
            traceparent: crate::telemetry::current_traceparent(),
            rule: Some(rule),
            approvers,
            quorum,
            expires_in,
        };
        let pending = self.request_approval(site, new, None).await?;
        Ok(CallOutcome::AwaitsApproval(Box::new(pending)))
    }
}
