//! `POST /ag-ui`: the agent as an AG-UI 1.0 back end (CLIENTS.md §3).
//! `RunAgentInput` in, `text/event-stream` out: `RUN_STARTED` at once,
//! then what the run added and `RUN_FINISHED` (its outcome `success`, or
//! `interrupt` with the approvals and questions it waits on), or
//! `RUN_ERROR` for a refused or failed run. What a run means is the
//! engine's (`engine::ag_ui`); this file speaks the wire.
//!
//! A body that is not a `RunAgentInput` is a plain 400 before any stream
//! (nothing ran); a run the engine refuses (another principal's thread, a
//! resume that misses an interrupt, a bad payload) is `RUN_ERROR` with a
//! `code` and the reason, and nothing decided. The run goes on its own
//! task, so a client that hangs up mid-run does not stop a decision half
//! way; the approval it made stays made.

pub(crate) mod events;
pub(crate) mod input;
pub(crate) mod view;

use crate::engine::EngineError;
use crate::engine::ag_ui::service::AgUi;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::ApiJson;
use crate::http::pages::UiPages;
use crate::http::state::AppState;
use axum::extract::State;
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use axum::response::{IntoResponse, Response};
use events::Event;
use input::RunAgentInput;
use std::convert::Infallible;
use std::time::Duration;

/// `POST /ag-ui`.
pub(crate) async fn run(
    State(state): State<AppState>,
    Caller(ctx): Caller,
    headers: HeaderMap,
    ApiJson(body): ApiJson<RunAgentInput>,
) -> Result<Response, ApiError> {
    let may_send = !state.auth.enforced()
        || ctx
            .principal
            .allow(crate::domain::principal::Role::Requester);
    let req = body.request(may_send).map_err(ApiError::BadRequest)?;

    let pages = UiPages::new(&crate::http::paths::base_url(
        state.config.public_url.as_deref(),
        &headers,
        state.config.port,
    ));
    let (thread, run) = (body.thread_id.clone(), body.run_id.clone());
    let (tx, rx) = tokio::sync::mpsc::channel::<Event>(64);
    let started = Event::RunStarted {
        thread_id: thread.clone(),
        run_id: run.clone(),
    };
    // The channel is empty: the first sends cannot wait.
    let _ = tx.try_send(started);
    if let Some(e) = tools_ignored(&body.tools) {
        let _ = tx.try_send(e);
    }
    let service = AgUi::new(state.engine.clone());
    tokio::spawn(async move {
        let out = match service.run(req, ctx).await {
            Ok(view) => view::events(&view, &thread, &run, &pages),
            Err(e) => vec![run_error(e)],
        };
        for e in out {
            if tx.send(e).await.is_err() {
                break;
            }
        }
    });
    let stream = futures_util::stream::unfold(rx, |mut rx| async move {
        let e = rx.recv().await?;
        let data = serde_json::to_string(&e).unwrap_or_default();
        Some((Ok::<_, Infallible>(SseEvent::default().data(data)), rx))
    });
    Ok(Sse::new(stream)
        .keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
        .into_response())
}

/// Client-side tools (`RunAgentInput.tools`) are not offered to the model
/// in this version (CLIENTS.md §3): the run says so once, by name.
fn tools_ignored(tools: &[serde_json::Value]) -> Option<Event> {
    if tools.is_empty() {
        return None;
    }
    let names: Vec<&str> = tools.iter().filter_map(|t| t["name"].as_str()).collect();
    Some(Event::Custom {
        name: "dev.stopgo/client-tools-not-offered",
        value: serde_json::json!({
            "tools": names,
            "message": "this agent does not offer client-side tools to its model; the run goes on without them",
        }),
    })
}

/// A refused or failed run: `code` names the kind (as REST's status would),
/// `message` the reason; an internal error's detail stays in the log.
fn run_error(e: EngineError) -> Event {
    let e = ApiError::from(e);
    if e.is_internal() {
        let id = crate::http::error::log_internal(&e);
        return Event::RunError {
            message: crate::http::error::internal_message(&id),
            code: "internal".into(),
        };
    }
    let code = match e.status().as_u16() {
        400 => "invalid_input",
        403 => "forbidden",
        404 => "not_found",
        409 => "conflict",
        503 => "unavailable",
        _ => "failed",
    };
    Event::RunError {
        message: e.public_message(),
        code: code.into(),
    }
}
