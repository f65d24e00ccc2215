//! Who may do what over A2A (AUTH.md §2, §6).
//!
//! The guard has let only known callers reach `/a2a`; here each method's
//! role is checked, and a message that decides an approval (the approval
//! words or `{"approved": bool}`) is authorized as a decision, by the same
//! [`crate::domain::principal::may_decide`] as REST and the UI. A refusal is HTTP 403
//! with a JSON-RPC error naming the missing role, and the approval stays
//! pending.

use super::rpc::RpcError;
use super::tasks::Plan;
use crate::domain::principal::{Role, may_decide};
use crate::engine::Ctx;
use crate::http::state::AppState;

/// Refuses `method` unless the caller has its role.
pub(crate) fn method(state: &AppState, method: &str, ctx: &Ctx) -> Result<(), RpcError> {
    let need = crate::http::auth::access::a2a_method(method);
    // Sending may turn out to be a decision, which needs approver instead
    // (checked once the message is read: [`plan`]).
    if !state.auth.enforced() || need == Role::Requester || ctx.principal.allow(need) {
        return Ok(());
    }
    Err(RpcError::forbidden(format!(
        "{method} needs the role `{need}`, which {} does not have",
        ctx.principal.name
    )))
}

/// Refuses a planned message the caller may not send.
pub(crate) async fn plan(state: &AppState, plan: &Plan, ctx: &Ctx) -> Result<(), RpcError> {
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
pub(crate) async fn cancel(state: &AppState, id: &str, ctx: &Ctx) -> Result<(), RpcError> {
    let p = &ctx.principal;
    if !state.auth.enforced() || p.allow(Role::Admin) {
        return Ok(());
    }
    if !p.allow(Role::Requester) {
        return Err(RpcError::forbidden(format!(
            "CancelTask needs the role `requester`, which {} does not have",
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
            "{} may cancel only their own tasks (this one was started by {}); an admin may cancel any",
            p.name,
            owner.as_deref().unwrap_or("someone else")
        )))
    }
}
