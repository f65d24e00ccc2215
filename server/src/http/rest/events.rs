//! `GET /events` and `GET /conversations/:id/events`: server-sent events.
//!
//! Each event's SSE `event` name is its kind (`message_added`,
//! `tool_call_started`, …), its `data` the JSON [`app::models::Event`], its
//! `id` what a reconnecting client sends back as `Last-Event-ID` to catch
//! up (see [`crate::events`]). A comment is sent every 15 s so proxies keep
//! the connection open. The per-conversation stream answers 404 for an
//! unknown conversation, like the rest of the API.

use crate::events::{Delivery, Subscription};
use crate::http::error::ApiError;
use crate::http::state::AppState;
use axum::extract::{Path, State};
use axum::http::HeaderMap;
use axum::response::sse::{Event as SseEvent, KeepAlive, Sse};
use futures_util::stream::{self, Stream};
use std::convert::Infallible;
use std::time::Duration;

/// The `Last-Event-ID` header, if any.
fn last_event_id(headers: &HeaderMap) -> Option<String> {
    headers
        .get("last-event-id")
        .and_then(|v| v.to_str().ok())
        .map(str::to_string)
}

/// `GET /events`: every conversation.
pub(crate) async fn all(
    State(state): State<AppState>,
    headers: HeaderMap,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let sub = state
        .engine
        .events()
        .subscribe(last_event_id(&headers).as_deref());
    sse(state, sub, None)
}

/// `GET /conversations/:id/events`: one conversation.
pub(crate) async fn one(
    State(state): State<AppState>,
    Path(id): Path<String>,
    headers: HeaderMap,
) -> Result<Sse<impl Stream<Item = Result<SseEvent, Infallible>>>, ApiError> {
    // Subscribe before checking, so nothing published in between is lost.
    let sub = state
        .engine
        .events()
        .subscribe(last_event_id(&headers).as_deref());
    let exists = state.store.conversation_exists(&id).await?;
    if !exists {
        return Err(ApiError::NotFound(format!("conversation {id:?} not found")));
    }
    Ok(sse(state, sub, Some(id)))
}

fn sse(
    state: AppState,
    sub: Subscription,
    only: Option<String>,
) -> Sse<impl Stream<Item = Result<SseEvent, Infallible>>> {
    let events = state.engine.events().clone();
    let stream = stream::unfold(sub, move |mut sub| {
        let only = only.clone();
        let events = events.clone();
        async move {
            loop {
                let out = match sub.next().await? {
                    Delivery::Resync => SseEvent::default().event("resync").data("{}"),
                    Delivery::Event(p) => {
                        if only
                            .as_deref()
                            .is_some_and(|c| c != p.event.conversation_id)
                        {
                            continue;
                        }
                        let data = serde_json::to_string(&*p.event).unwrap_or_default();
                        SseEvent::default()
                            .id(events.id(p.seq))
                            .event(p.event.kind.as_str())
                            .data(data)
                    }
                };
                return Some((Ok(out), sub));
            }
        }
    });
    Sse::new(stream).keep_alive(KeepAlive::new().interval(Duration::from_secs(15)))
}
