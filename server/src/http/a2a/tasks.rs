//! The A2A task methods as every binding calls them (`SendMessage`,
//! `GetTask`, `CancelTask`, `ListTasks`): their parameters read, the task
//! service (`engine::a2a_tasks`) called, the answer written in the
//! dialect's shape. What a task is, what a message means for it and how
//! it runs are the service's.

use super::rpc::{RpcError, param_str, param_u64};
use crate::a2a::wire::{Dialect, TaskState, TaskView};
use crate::domain::tools::CallContext;
use crate::engine::EngineError;
use crate::engine::a2a_tasks::error::TaskError;
use crate::engine::a2a_tasks::executor::Ran;
use crate::engine::a2a_tasks::view::{stored_state, view};
use crate::http::state::AppState;
use app::models::{Conversation, ListQuery};
use serde_json::{Value, json};

/// `SendMessage` / `message/send`, blocking unless asked not to.
pub(crate) async fn send(
    state: &AppState,
    params: &Value,
    d: Dialect,
    mut ctx: CallContext,
) -> Result<Value, RpcError> {
    let mut m = crate::a2a::wire::incoming(params, d).map_err(RpcError::params)?;
    m.dialect = Some(d);
    ctx.message_id = m.message_id.clone();
    let config = params.get("configuration");
    let immediate = match d {
        Dialect::V1 => config
            .and_then(|c| {
                c.get("returnImmediately")
                    .or_else(|| c.get("return_immediately"))
            })
            .and_then(Value::as_bool)
            .unwrap_or(false),
        _ => config
            .and_then(|c| c.get("blocking"))
            .and_then(Value::as_bool)
            .map(|b| !b)
            .unwrap_or(false),
    };
    let history = config
        .map(|c| param_u64(c, "historyLength", "history_length"))
        .transpose()?
        .flatten()
        .map(|n| n as usize);
    let push = super::push::on_send(state, params)?;
    let plan = state.a2a.plan(&m, d).await?;
    super::authorize::plan(state, &plan, &ctx).await?;
    // A push config needs its task before the task changes state.
    let plan = match &push {
        Some(p) => {
            let id = state.a2a.task_for(&plan, &m, &ctx).await?;
            super::push::register(state, &id, p, d, &ctx).await?;
            plan.on(&id)
        }
        None => plan,
    };
    if immediate {
        let id = state.a2a.task_for(&plan, &m, &ctx).await?;
        let plan = plan.on(&id);
        let (a2a, ctx2) = (state.a2a.clone(), ctx.clone());
        state.tasks.spawn_background("a2a task", async move {
            if let Err(e) = a2a.run(plan, ctx2).await {
                let e = RpcError::from(e);
                tracing::warn!(error = %e.message, "a task sent with returnImmediately failed");
            }
        });
        let c = state.a2a.load(&id).await?;
        // Reported as working: the turn has been handed over.
        let mut v = state.a2a.view_of(&c, history);
        v.state = TaskState::Working;
        return Ok(wrap(&v, d));
    }
    match state.a2a.run(plan, ctx).await? {
        Ran::Task(c) => Ok(wrap(&state.a2a.view_of(&c, history), d)),
        Ran::Message(m) => {
            let msg = crate::a2a::wire::message(&m, d);
            Ok(match d {
                Dialect::V1 => json!({ "message": msg }),
                _ => msg,
            })
        }
    }
}

/// The `SendMessage` result: `{"task": …}` in 1.0, the task itself in 0.3.
fn wrap(v: &TaskView, d: Dialect) -> Value {
    let t = crate::a2a::wire::task(v, d, true);
    match d {
        Dialect::V1 => json!({ "task": t }),
        _ => t,
    }
}

/// `GetTask` / `tasks/get`.
pub(crate) async fn get(state: &AppState, params: &Value, d: Dialect) -> Result<Value, RpcError> {
    let id = param_str(params, "id", "id").ok_or_else(|| RpcError::params("`id` is required"))?;
    let history = param_u64(params, "historyLength", "history_length")?.map(|n| n as usize);
    let c = state.a2a.load(&id).await?;
    Ok(crate::a2a::wire::task(
        &state.a2a.view_of(&c, history),
        d,
        true,
    ))
}

/// `CancelTask` / `tasks/cancel`: pending approvals are cancelled, never run.
pub(crate) async fn cancel(
    state: &AppState,
    params: &Value,
    d: Dialect,
    ctx: CallContext,
) -> Result<Value, RpcError> {
    let id = param_str(params, "id", "id").ok_or_else(|| RpcError::params("`id` is required"))?;
    let c = state.a2a.load(&id).await?;
    super::authorize::cancel(state, &id, &ctx).await?;
    let st = state.a2a.view_of(&c, Some(0)).state;
    if st.is_terminal() {
        return Err(RpcError::not_cancelable(format!(
            "task {id:?} is {} and cannot be canceled",
            st.wire(Dialect::V03)
        )));
    }
    let c = state.engine.cancel(&id, ctx).await.map_err(|e| match e {
        EngineError::Busy(_) => RpcError::not_cancelable(format!(
            "task {id:?} is running a step that did not stop in time; try again"
        )),
        e => TaskError::from(e).into(),
    })?;
    Ok(crate::a2a::wire::task(&view(&c, false, None), d, true))
}

/// `ListTasks` (1.0): newest first, cursor paging, optional filters.
pub(crate) async fn list(state: &AppState, params: &Value, d: Dialect) -> Result<Value, RpcError> {
    let page_size = param_u64(params, "pageSize", "page_size")?.unwrap_or(50);
    if !(1..=100).contains(&page_size) {
        return Err(RpcError::params(format!(
            "pageSize {page_size} is out of range: use 1 to 100"
        )));
    }
    let history = param_u64(params, "historyLength", "history_length")?.map(|n| n as usize);
    let include_artifacts = params
        .get("includeArtifacts")
        .or_else(|| params.get("include_artifacts"))
        .and_then(Value::as_bool)
        .unwrap_or(false);
    let wanted = match param_str(params, "status", "status") {
        None => None,
        Some(s) => Some(TaskState::parse(&s).ok_or_else(|| {
            RpcError::params(format!("unknown status {s:?}: use a TASK_STATE_* name"))
        })?),
    };
    let render = |c: &Conversation| {
        let v = state.a2a.view_of(c, history);
        (v.state, crate::a2a::wire::task(&v, d, include_artifacts))
    };
    if let Some(cid) = param_str(params, "contextId", "context_id") {
        let id = state
            .store
            .by_context(&cid)
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?;
        let found = match id {
            Some(id) => state
                .store
                .get_conversation(id)
                .await
                .map_err(|e| RpcError::internal(e.to_string()))?,
            None => None,
        };
        let tasks: Vec<Value> = found
            .iter()
            .map(render)
            .filter(|(st, _)| wanted.is_none_or(|w| w == *st))
            .map(|(_, t)| t)
            .collect();
        let n = tasks.len();
        return Ok(
            json!({"tasks": tasks, "nextPageToken": "", "pageSize": page_size, "totalSize": n}),
        );
    }
    let token = param_str(params, "pageToken", "page_token").filter(|t| !t.is_empty());
    if let Some(w) = wanted {
        return list_in_state(state, w, token, page_size as usize, render).await;
    }
    let token_given = token.clone();
    let page = crate::http::rest::conversations::full_page(
        &state.store,
        ListQuery {
            limit: Some(page_size as u32),
            cursor: token,
            ..Default::default()
        },
    )
    .await
    .map_err(|e| list_error(e, token_given))?;
    let tasks: Vec<Value> = page.conversations.iter().map(|c| render(c).1).collect();
    Ok(json!({
        "tasks": tasks,
        "nextPageToken": page.next_cursor.unwrap_or_default(),
        "pageSize": page_size,
        "totalSize": page.summary.total,
    }))
}

/// Why a page of tasks could not be listed: a `pageToken` this server did
/// not issue is the client's mistake (`-32602`, said in A2A's words); any
/// other failure is internal (`-32603` with a correlation id, the detail
/// only in the log).
fn list_error(e: crate::http::error::ApiError, token: Option<String>) -> RpcError {
    match (e, token) {
        (crate::http::error::ApiError::BadRequest(_), Some(t)) => RpcError::params(format!(
            "pageToken {t:?} is not one this server issued: pass the nextPageToken of the previous page"
        )),
        (e, _) => RpcError::internal(e.to_string()),
    }
}

/// `ListTasks` with a status filter. A task's state is derived from its
/// conversation's status, whether a turn runs and who spoke last; the row
/// keeps it as a generated column (same rule as [`task_state`]) with an
/// index and a kept count, so a page costs the same however many tasks
/// are stored. `totalSize` counts the matching tasks; the token is the
/// position after the last one, as without a filter.
async fn list_in_state(
    state: &AppState,
    wanted: TaskState,
    token: Option<String>,
    page_size: usize,
    render: impl Fn(&Conversation) -> (TaskState, Value),
) -> Result<Value, RpcError> {
    let before = match token {
        None => i64::MAX,
        Some(t) => t.parse::<i64>().map_err(|_| {
            RpcError::params(format!(
                "pageToken {t:?} is not one this server issued: pass the nextPageToken of the previous page"
            ))
        })?,
    };
    let limit = u32::try_from(page_size)
        .unwrap_or(u32::MAX)
        .saturating_add(1);
    let found = state
        .store
        .tasks_in_state(stored_state(wanted), before, limit)
        .await
        .map_err(|e| RpcError::internal(e.to_string()))?;
    let more = found.page.len() > page_size;
    let mut tasks = Vec::new();
    let mut last = None;
    for (seq, id) in found.page.into_iter().take(page_size) {
        // A conversation deleted since the page was read is skipped.
        if let Some(c) = state
            .store
            .get_conversation(id)
            .await
            .map_err(|e| RpcError::internal(e.to_string()))?
        {
            tasks.push(render(&c).1);
        }
        last = Some(seq);
    }
    let next = match last {
        Some(seq) if more => seq.to_string(),
        _ => String::new(),
    };
    let total = found.total;
    Ok(json!({"tasks": tasks, "nextPageToken": next, "pageSize": page_size, "totalSize": total}))
}

#[cfg(test)]
mod tests {
    use super::list_error;
    use crate::http::error::ApiError;
    use crate::store::StoreError;

    /// Issue 40 (8): a bad `pageToken` is the client's mistake, said in
    /// A2A's words; a store failure is -32603 with a correlation id and
    /// none of the store's own text.
    #[test]
    fn list_errors_blame_the_client_only_for_its_token() {
        let bad = list_error(
            ApiError::BadRequest("cursor \"x\" is not one this server issued".into()),
            Some("x".into()),
        );
        assert_eq!(bad.code, -32602);
        assert!(bad.message.contains("pageToken \"x\""), "{}", bad.message);
        let sql = "database error: no such table: conversations (at /srv/data/agent.db)";
        let store = list_error(
            ApiError::Store(StoreError::Database("Query is not read-only".into())),
            Some("5".into()),
        );
        assert_eq!(store.code, -32603);
        assert!(
            store.message.contains("internal error (id "),
            "{}",
            store.message
        );
        assert!(!store.message.contains("database"), "{}", store.message);
        let other = list_error(ApiError::Internal(sql.into()), None);
        assert_eq!(other.code, -32603);
        assert!(!other.message.contains("/srv/data"), "{}", other.message);
    }
}
