//! `in_doubt` resolved by a person (RECEIPTS.md §3): the call ran, it did
//! not, or (only where its server honours idempotency keys) send it once
//! more with its key and a fresh receipt, and record what the server says.
//! A retry takes the conversation's lock like any writer, so it never
//! races a turn.

use crate::domain::tools::{CallContext, ToolOutput};
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::store::approvals::Approval;
use crate::store::resolutions::Outcome;
use app::models::ApprovalStatus;

impl Engine {
    /// Resolves approval `uuid`'s call as `outcome` says, with `note`; the
    /// approval afterwards.
    pub(crate) async fn resolve(
        &self,
        uuid: &str,
        outcome: Outcome,
        note: Option<String>,
        ctx: &CallContext,
    ) -> Result<Approval, EngineError> {
        let a = self
            .inner
            .store
            .approval(uuid)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("approval {uuid:?} not found")))?;
        if a.status != ApprovalStatus::InDoubt {
            return Err(EngineError::AlreadyDecided {
                uuid: uuid.to_string(),
                status: a.status,
            });
        }
        let by = super::decider(ctx);
        let done = match outcome {
            Outcome::Retry => return self.retry_in_doubt(a, note, ctx).await,
            Outcome::Executed | Outcome::Failed => {
                self.inner
                    .store
                    .resolve_in_doubt(uuid, outcome == Outcome::Executed, note, by)
                    .await?
            }
        };
        done.ok_or_else(|| EngineError::AlreadyDecided {
            uuid: uuid.to_string(),
            status: a.status,
        })
    }

    /// Sends an in-doubt call once more with its idempotency key.
    async fn retry_in_doubt(
        &self,
        a: Approval,
        note: Option<String>,
        ctx: &CallContext,
    ) -> Result<Approval, EngineError> {
        let server = a.server.clone().unwrap_or_default();
        if !self.inner.tools.keyed_servers().contains(&server) {
            return Err(EngineError::Invalid(format!(
                "`retry` needs a server that honours idempotency keys, and `{server}` does not say it does (mcp_servers[].idempotent: true, or its experimental[\"dev.stopgo/idempotency\"]): check what happened and resolve it as executed or failed"
            )));
        }
        let conversation_id = a.approval.conversation_id.clone();
        let _guard = self.lock(&conversation_id).await?;
        let args = a
            .approval
            .edited_args
            .clone()
            .unwrap_or_else(|| a.approval.tool_args.clone());
        let mint = self.inner.receipts.get().map(|i| {
            i.mint(&crate::engine::receipt::Call {
                server: &server,
                tool: &a.approval.tool_name,
                arguments: &args,
            })
        });
        let uuid = a.approval.uuid.clone();
        let Some((a, claimed)) = self
            .inner
            .store
            .claim_resolution_retry(&uuid, note, super::decider(ctx), mint)
            .await?
        else {
            return Err(EngineError::AlreadyDecided {
                uuid,
                status: a.status,
            });
        };
        let mut call_ctx = ctx.clone();
        call_ctx.idempotency_key = Some(crate::engine::calls::idempotency_key(
            &conversation_id,
            &a.message_id,
        ));
        let receipt_sha256 = claimed
            .receipt
            .as_deref()
            .map(crate::engine::receipt::digest);
        call_ctx.receipt = claimed.receipt;
        let (text, is_error) = match self
            .inner
            .tools
            .call(&a.approval.tool_name, args.clone(), &call_ctx)
            .await
        {
            Ok(ToolOutput { text, is_error, .. }) => (text, is_error),
            Err(e) => (e.to_string(), true),
        };
        self.inner
            .store
            .finish_call(crate::store::FinishedCall {
                conversation_id,
                message_id: a.message_id.clone(),
                approval_uuid: Some(uuid.clone()),
                tool: a.approval.tool_name.clone(),
                server: a.server.clone(),
                arguments: args,
                text,
                is_error,
                receipt_sha256,
            })
            .await?;
        self.inner
            .store
            .approval(&uuid)
            .await?
            .ok_or_else(|| EngineError::NotFound(format!("approval {uuid:?} not found")))
    }
}
