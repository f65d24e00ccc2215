//! `POST /a2a` (and `/a2a/`): the JSON-RPC endpoint.
//!
//! Reads the envelope (`rpc`), checks the hop count, and dispatches by
//! method to `tasks` (blocking calls) or `stream` (SSE). Every request's
//! `Authorization: Bearer` and `X-Session-ID` are in the caller context and
//! go along to sub-agents; `X-A2A-Hop-Count` beyond `a2a_max_hops` is
//! refused so that delegation cycles end.

use super::errors::plain_error;
use super::rpc::{self, RpcError};
use super::{push, stream, tasks};
use crate::http::caller::Caller;
use crate::http::state::AppState;
use axum::Json;
use axum::body::Bytes;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::{IntoResponse, Response};

/// The JSON-RPC handler.
pub(crate) async fn handle(
    State(state): State<AppState>,
    Caller(mut ctx): Caller,
    headers: HeaderMap,
    body: Bytes,
) -> Response {
    let req = match rpc::read(&headers, &body) {
        Ok(r) => r,
        Err((id, e, d)) => return Json(rpc::error(&id, &e, d)).into_response(),
    };
    let hops = match super::arrival::arrived(&state, &headers, &mut ctx) {
        Ok(h) => h,
        Err(e) => return Json(rpc::error(&req.id, &e, req.dialect)).into_response(),
    };
    let (id, d, p) = (req.id.clone(), req.dialect, &req.params);
    if let Err(e) = super::authorize::method(&state, &req.method, &ctx) {
        return plain_error(&id, &e, d);
    }
    // Shown on the request's "done" line (one log line per request).
    let span = tracing::Span::current();
    span.record("rpc", tracing::field::display(&req.method));
    span.record("hops", hops);
    crate::telemetry::metrics::get().a2a(known_method(&req.method), d.label());
    if matches!(
        req.method.as_str(),
        "SendMessage" | "message/send" | "SendStreamingMessage" | "message/stream"
    ) && let Err(e) = rpc::check_extensions(&state.config, &headers, p)
    {
        return plain_error(&id, &e, d);
    }
    let out = match req.method.as_str() {
        "SendMessage" | "message/send" => tasks::send(&state, p, d, ctx).await,
        "GetTask" | "tasks/get" => tasks::get(&state, p, d).await,
        "CancelTask" | "tasks/cancel" => tasks::cancel(&state, p, d, ctx).await,
        "ListTasks" => tasks::list(&state, p, d).await,
        "SendStreamingMessage" | "message/stream" => {
            return stream::send(state, stream::Framing::Rpc(id), p.clone(), d, ctx).await;
        }
        "SubscribeToTask" | "tasks/resubscribe" => {
            return stream::subscribe(state, stream::Framing::Rpc(id), p.clone(), d).await;
        }
        "CreateTaskPushNotificationConfig" | "tasks/pushNotificationConfig/set" => {
            push::create(&state, p, d, &ctx).await
        }
        "GetTaskPushNotificationConfig" | "tasks/pushNotificationConfig/get" => {
            push::get(&state, p, d).await
        }
        "ListTaskPushNotificationConfigs" | "tasks/pushNotificationConfig/list" => {
            push::list(&state, p, d).await
        }
        "DeleteTaskPushNotificationConfig" | "tasks/pushNotificationConfig/delete" => {
            push::delete(&state, p, d, &ctx).await
        }
        "GetExtendedAgentCard" | "agent/getAuthenticatedExtendedCard" => {
            super::card::extended(&state, &headers, d)
        }
        other => Err(RpcError::method(format!(
            "unknown method {other:?}: use SendMessage, SendStreamingMessage, GetTask, ListTasks, CancelTask, SubscribeToTask, the *TaskPushNotificationConfig methods or GetExtendedAgentCard (1.0), or message/send, message/stream, tasks/get, tasks/cancel, tasks/resubscribe, tasks/pushNotificationConfig/* or agent/getAuthenticatedExtendedCard (0.3)"
        ))),
    };
    match out {
        Ok(result) => Json(rpc::result(&id, result)).into_response(),
        Err(e) => {
            if e.code == -32603 {
                tracing::warn!(error = %e.message, "a2a request failed");
            }
            plain_error(&id, &e, d)
        }
    }
}

/// The method as a metrics label: one of ours, else `other` (a caller
/// cannot grow the label set by inventing methods).
fn known_method(method: &str) -> &'static str {
    const KNOWN: &[&str] = &[
        "SendMessage",
        "SendStreamingMessage",
        "GetTask",
        "ListTasks",
        "CancelTask",
        "SubscribeToTask",
        "message/send",
        "message/stream",
        "tasks/get",
        "tasks/cancel",
        "tasks/resubscribe",
        "CreateTaskPushNotificationConfig",
        "GetTaskPushNotificationConfig",
        "ListTaskPushNotificationConfigs",
        "DeleteTaskPushNotificationConfig",
        "GetExtendedAgentCard",
        "tasks/pushNotificationConfig/set",
        "tasks/pushNotificationConfig/get",
        "tasks/pushNotificationConfig/list",
        "tasks/pushNotificationConfig/delete",
        "agent/getAuthenticatedExtendedCard",
    ];
    KNOWN
        .iter()
        .find(|m| **m == method)
        .copied()
        .unwrap_or("other")
}
