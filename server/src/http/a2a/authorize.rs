//! Who may do what over A2A (AUTH.md §2, §6).
//!
//! The guard has let only known callers reach `/a2a`; here each method's
//! role is checked, and a message that decides an approval (the approval
//! words or `{"approved": bool}`) is authorized as a decision, by the same
//! [`crate::domain::principal::may_decide`] as REST and the UI. Cancelling
//! a task and setting or deleting its push notification configs are the
//! task's own requester's (or an admin's): a config sends the task's
//! states to a URL of the caller's choosing, and deleting one silences
//! whoever follows the task. A refusal is HTTP 403 (gRPC
//! `PERMISSION_DENIED`) with an error naming the missing role, and nothing
//! changes.

use super::rpc::RpcError;
use crate::domain::principal::{Role, may_decide};
use crate::domain::tools::CallContext;
use crate::engine::a2a_tasks::plan::Plan;
use crate::http::state::AppState;

/// Refuses `method` unless the caller has its role.
pub(crate) fn method(state: &AppState, method: &str, ctx: &CallContext) -> Result<(), RpcError> {
    let need = crate::http::auth::access::a2a_method(method);
    // Sending may turn out to be a decision or an answer, which need other
    // roles (checked once the message is read: [`plan`]).
    let send = matches!(
        method,
        "SendMessage" | "message/send" | "SendStreamingMessage" | "message/stream"
    );
    if !state.auth.enforced() || send || ctx.principal.allow(need) {
        return Ok(());
    }
    Err(RpcError::forbidden(format!(
        "{method} needs the role `{need}`, which {} does not have",
        ctx.principal.name
    )))
}

/// Refuses a planned message the caller may not send.
pub(crate) async fn plan(state: &AppState, plan: &Plan, ctx: &CallContext) -> Result<(), RpcError> {
    if !state.auth.enforced() {
        return Ok(());
    }
    let p = &ctx.principal;
    match plan {
        Plan::Decide { uuid, .. } => {
            let requested_by = state
                .store
                .approval(uuid)
                .await
                .map_err(|e| RpcError::internal(e.to_string()))?
                .and_then(|a| a.approval.requested_by);
            may_decide(
                true,
                state.auth.separation_of_duties,
                p,
                requested_by.as_deref(),
            )
            .map(drop)
            .map_err(|r| RpcError::forbidden(r.message(&p.name)))
        }
        // Who may answer a question is the engine's to say (whoever sent
        // the latest message, or an approver), as for REST and the UI.
        Plan::Answer { .. } => Ok(()),
        _ if p.allow(Role::Requester) => Ok(()),
        _ => Err(RpcError::forbidden(format!(
            "sending messages needs the role `requester`, which {} does not have",
            p.name
        ))),
    }
}

/// Refuses cancelling a task the caller did not start (admins may).
pub(crate) async fn cancel(state: &AppState, id: &str, ctx: &CallContext) -> Result<(), RpcError> {
    own_task(state, id, ctx, "CancelTask", "cancel").await
}

/// Refuses setting or deleting (`what`, e.g. "deleting a push
/// notification config") a push notification config of a task the caller
/// did not start (admins may).
pub(crate) async fn push_config(
    state: &AppState,
    id: &str,
    ctx: &CallContext,
    what: &str,
) -> Result<(), RpcError> {
    let doing = "set or delete the push notification configs of";
    own_task(state, id, ctx, what, doing).await
}

/// Refuses `what` (a method, or what it does) on task `id` unless the
/// caller is an admin, or a requester who started the task.
async fn own_task(
    state: &AppState,
    id: &str,
    ctx: &CallContext,
    what: &str,
    doing: &str,
) -> Result<(), RpcError> {
    let p = &ctx.principal;
    if !state.auth.enforced() || p.allow(Role::Admin) {
        return Ok(());
    }
    if !p.allow(Role::Requester) {
        return Err(RpcError::forbidden(format!(
            "{what} needs the role `requester`, which {} does not have",
            p.name
        )));
    }
    let owner = state
        .store
        .created_by(id)
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?;
    if owner.as_deref() == Some(p.name.as_str()) {
        Ok(())
    } else {
        Err(RpcError::forbidden(format!(
            "{} may {doing} only their own tasks (this one was started by {}); an admin may {doing} any",
            p.name,
            owner.as_deref().unwrap_or("someone else")
        )))
    }
}
