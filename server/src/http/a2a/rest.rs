//! The HTTP+JSON binding of A2A 1.0 (the specification's §11 and the HTTP
//! annotations of `a2a.proto`), under the agent's A2A base `/a2a`, so it
//! never meets the REST API or the UI:
//!
//! | route | operation |
//! | --- | --- |
//! | `POST /a2a/message:send` | SendMessage |
//! | `POST /a2a/message:stream` | SendStreamingMessage (SSE) |
//! | `GET /a2a/tasks/{id}` | GetTask (`?historyLength=`) |
//! | `GET /a2a/tasks` | ListTasks (`?contextId=&status=&pageSize=&pageToken=&historyLength=&includeArtifacts=`) |
//! | `POST /a2a/tasks/{id}:cancel` | CancelTask |
//! | `POST` or `GET /a2a/tasks/{id}:subscribe` | SubscribeToTask (SSE) |
//! | `POST`, `GET /a2a/tasks/{id}/pushNotificationConfigs` | create, list push configs |
//! | `GET`, `DELETE /a2a/tasks/{id}/pushNotificationConfigs/{configId}` | get, delete one |
//! | `GET /a2a/extendedAgentCard` | GetExtendedAgentCard |
//!
//! The bodies are the JSON-RPC binding's `params` and `result`, so every
//! operation runs the same code as JSON-RPC (`tasks`, `stream`, `push`);
//! streams carry bare `StreamResponse` objects. Errors are the HTTP status
//! of the spec's mapping with AIP-193's `google.rpc.Status` body and its
//! `ErrorInfo` (`RpcError::rest_body`).

use super::errors::rest_error;
use super::rpc::{self, RpcError};
use super::stream::{self, Framing};
use super::{push, tasks};
use crate::a2a::wire::Dialect;
use crate::domain::tools::CallContext;
use crate::http::caller::Caller;
use crate::http::extract::Drained;
use crate::http::state::AppState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::rejection::QueryRejection;
use axum::extract::{Path, Query, State};
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};
use serde_json::{Map, Value, json};
use std::collections::HashMap;

const D: Dialect = Dialect::V1;

fn answer(r: Result<Value, RpcError>) -> Response {
    match r {
        Ok(v) => Json(v).into_response(),
        Err(e) => rest_error(&e),
    }
}

/// What every call checks first: the version, the hop count, the role.
fn arrive(
    state: &AppState,
    headers: &HeaderMap,
    ctx: &mut CallContext,
    method: &'static str,
) -> Result<(), RpcError> {
    rpc::check_v1(headers)?;
    super::arrival::arrived(state, headers, ctx)?;
    let span = tracing::Span::current();
    span.record("rpc", method);
    span.record("hops", ctx.hops);
    crate::telemetry::metrics::get().a2a(method, "http+json");
    super::authorize::method(state, method, ctx)
}

/// A JSON object body (empty reads as `{}`).
fn body_of(headers: &HeaderMap, body: &Bytes) -> Result<Value, RpcError> {
    if !rpc::json_content(headers) {
        return Err(RpcError::new(
            -32005,
            "the request body must be JSON (Content-Type: application/json)",
        ));
    }
    if body.iter().all(u8::is_ascii_whitespace) {
        return Ok(json!({}));
    }
    let v: Value = serde_json::from_slice(body)
        .map_err(|e| RpcError::parse(format!("the body is not valid JSON: {e}")))?;
    if !v.is_object() {
        return Err(RpcError::params("the body must be a JSON object"));
    }
    Ok(v)
}

/// Query parameters as `params` (`includeArtifacts` as a boolean).
fn query_of(
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Result<Map<String, Value>, RpcError> {
    let Query(q) =
        q.map_err(|e| RpcError::params(format!("the query string cannot be read: {e}")))?;
    let mut out = Map::new();
    for (k, v) in q {
        let v = match k.as_str() {
            "includeArtifacts" | "include_artifacts" => match v.as_str() {
                "true" => Value::Bool(true),
                "false" => Value::Bool(false),
                _ => {
                    return Err(RpcError::params(format!(
                        "includeArtifacts must be true or false, not {v:?}"
                    )));
                }
            },
            _ => Value::String(v),
        };
        out.insert(k, v);
    }
    Ok(out)
}

/// `POST /a2a/message:send`.
pub(crate) async fn send(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = match arrive(&state, &headers, &mut ctx, "SendMessage")
        .and_then(|()| body_of(&headers, &body))
        .and_then(|p| rpc::check_extensions(&state.config, &headers, &p).map(|()| p))
    {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    answer(tasks::send(&state, &params, D, ctx).await)
}

/// `POST /a2a/message:stream`.
pub(crate) async fn stream(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let params = match arrive(&state, &headers, &mut ctx, "SendStreamingMessage")
        .and_then(|()| body_of(&headers, &body))
        .and_then(|p| rpc::check_extensions(&state.config, &headers, &p).map(|()| p))
    {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    stream::send(state, Framing::Rest, params, D, ctx).await
}

/// `GET /a2a/tasks/{id}` (and `{id}:subscribe`, which the proto maps to GET).
pub(crate) async fn get_task(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    Path(id): Path<String>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    if let Some(task) = id.strip_suffix(":subscribe") {
        return subscribe(state, ctx, &headers, task).await;
    }
    let mut params = match arrive(&state, &headers, &mut ctx, "GetTask").and_then(|()| query_of(q))
    {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    params.insert("id".into(), json!(id));
    answer(tasks::get(&state, &Value::Object(params), D).await)
}

/// `POST /a2a/tasks/{id}:cancel` and `POST /a2a/tasks/{id}:subscribe`.
pub(crate) async fn task_action(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    Path(spec): Path<String>,
    _body: Drained,
) -> Response {
    match spec.rsplit_once(':') {
        Some((id, "cancel")) => {
            if let Err(e) = arrive(&state, &headers, &mut ctx, "CancelTask") {
                return rest_error(&e);
            }
            answer(tasks::cancel(&state, &json!({ "id": id }), D, ctx).await)
        }
        Some((id, "subscribe")) => subscribe(state, ctx, &headers, id).await,
        _ => rest_error(&RpcError::method(format!(
            "POST /a2a/tasks/{spec}: use /a2a/tasks/{{id}}:cancel or /a2a/tasks/{{id}}:subscribe"
        ))),
    }
}

async fn subscribe(
    state: AppState,
    mut ctx: CallContext,
    headers: &HeaderMap,
    id: &str,
) -> Response {
    if let Err(e) = arrive(&state, headers, &mut ctx, "SubscribeToTask") {
        return rest_error(&e);
    }
    stream::subscribe(state, Framing::Rest, json!({ "id": id }), D).await
}

/// `GET /a2a/tasks`.
pub(crate) async fn list_tasks(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    match arrive(&state, &headers, &mut ctx, "ListTasks").and_then(|()| query_of(q)) {
        Ok(p) => answer(tasks::list(&state, &Value::Object(p), D).await),
        Err(e) => rest_error(&e),
    }
}

/// `POST /a2a/tasks/{id}/pushNotificationConfigs`.
pub(crate) async fn create_push(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    Path(task): Path<String>,
    body: Bytes,
) -> Response {
    let mut params = match arrive(
        &state,
        &headers,
        &mut ctx,
        "CreateTaskPushNotificationConfig",
    )
    .and_then(|()| body_of(&headers, &body))
    {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    params["taskId"] = json!(task);
    answer(push::create(&state, &params, D, &ctx).await)
}

/// `GET /a2a/tasks/{id}/pushNotificationConfigs`.
pub(crate) async fn list_push(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    Path(task): Path<String>,
    q: Result<Query<HashMap<String, String>>, QueryRejection>,
) -> Response {
    let mut params = match arrive(
        &state,
        &headers,
        &mut ctx,
        "ListTaskPushNotificationConfigs",
    )
    .and_then(|()| query_of(q))
    {
        Ok(p) => p,
        Err(e) => return rest_error(&e),
    };
    params.insert("taskId".into(), json!(task));
    answer(push::list(&state, &Value::Object(params), D).await)
}

/// `GET /a2a/tasks/{id}/pushNotificationConfigs/{configId}`.
pub(crate) async fn get_push(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    Path((task, config)): Path<(String, String)>,
) -> Response {
    if let Err(e) = arrive(&state, &headers, &mut ctx, "GetTaskPushNotificationConfig") {
        return rest_error(&e);
    }
    answer(push::get(&state, &json!({"taskId": task, "id": config}), D).await)
}

/// `DELETE /a2a/tasks/{id}/pushNotificationConfigs/{configId}`.
pub(crate) async fn delete_push(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    Path((task, config)): Path<(String, String)>,
    _body: Drained,
) -> Response {
    if let Err(e) = arrive(
        &state,
        &headers,
        &mut ctx,
        "DeleteTaskPushNotificationConfig",
    ) {
        return rest_error(&e);
    }
    answer(push::delete(&state, &json!({"taskId": task, "id": config}), D, &ctx).await)
}

/// `GET /a2a/extendedAgentCard`.
pub(crate) async fn extended_card(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
) -> Response {
    if let Err(e) = arrive(&state, &headers, &mut ctx, "GetExtendedAgentCard") {
        return rest_error(&e);
    }
    answer(super::card::extended(&state, &headers, D))
}
