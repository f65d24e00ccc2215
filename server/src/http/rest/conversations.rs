//! `/conversations`: create, list (paged, filtered, with summary), read, and
//! send a message.
//!
//! A message runs a turn through the engine; the response carries the
//! conversation after the turn and its result (`R`).

use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::state::AppState;
use crate::store::{PageRequest, Store};
use app::models::{
    ConversationList, ConversationResponse, ConversationStatus, CreateConversation,
    FullConversationList, ListQuery,
};
use axum::Json;
use axum::extract::{Path, State};
use axum::http::StatusCode;
use serde::Deserialize;

/// Default page size of `GET /conversations`.
pub(crate) const DEFAULT_LIMIT: u32 = 50;
/// Largest page size.
pub(crate) const MAX_LIMIT: u32 = 200;

/// The query string of `GET /conversations`; unknown parameters are refused
/// so a typo does not silently return the unfiltered list.
#[derive(Debug, Default, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct ListParams {
    limit: Option<u32>,
    cursor: Option<String>,
    status: Option<String>,
    q: Option<String>,
    view: Option<String>,
}

impl From<ListParams> for ListQuery {
    fn from(p: ListParams) -> Self {
        ListQuery {
            limit: p.limit,
            cursor: p.cursor,
            status: p.status,
            q: p.q,
            view: p.view,
        }
    }
}

/// What `GET /conversations` answers: list items, or whole conversations
/// with `?view=full`.
#[derive(serde::Serialize)]
#[serde(untagged)]
pub(crate) enum ListAnswer {
    Items(ConversationList),
    Full(FullConversationList),
}

/// The body of `POST /conversations/:id/messages`.
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub(crate) struct SendMessage {
    pub(crate) message: String,
}

/// `POST /conversations` → 201 `{"conversation": C}`, or with a message
/// `{"conversation": C, "result": R}` after the first turn.
pub(crate) async fn create(
    State(state): State<AppState>,
    Caller(ctx): Caller,
    ApiJson(body): ApiJson<CreateConversation>,
) -> Result<(StatusCode, Json<ConversationResponse>), ApiError> {
    let (conversation, reply) = state.engine.start_conversation(body.message, ctx).await?;
    tracing::info!(conversation = %conversation.id, "conversation created");
    Ok((
        StatusCode::CREATED,
        Json(ConversationResponse {
            conversation,
            result: reply.map(|r| r.result),
        }),
    ))
}

/// `GET /conversations?limit=&cursor=&status=&q=&view=`.
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(params): ApiQuery<ListParams>,
) -> Result<Json<ListAnswer>, ApiError> {
    let q: ListQuery = params.into();
    match q.view.as_deref() {
        None | Some("") | Some("summary") => {
            list_page(&state.store, q).await.map(ListAnswer::Items)
        }
        Some("full") => full_page(&state.store, q).await.map(ListAnswer::Full),
        Some(v) => Err(ApiError::BadRequest(format!(
            "unknown view {v:?}: use summary (the default) or full"
        ))),
    }
    .map(Json)
}

/// `GET /conversations/:id` → `{"conversation": C}`.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(id): Path<String>,
) -> Result<Json<ConversationResponse>, ApiError> {
    let conversation = load(&state.store, id).await?;
    Ok(Json(ConversationResponse {
        conversation,
        result: None,
    }))
}

/// `POST /conversations/:id/messages` → `{"conversation": C, "result": R}`;
/// 409 with the pending approval while one waits.
pub(crate) async fn send_message(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Caller(ctx): Caller,
    ApiJson(body): ApiJson<SendMessage>,
) -> Result<Json<ConversationResponse>, ApiError> {
    let reply = state.engine.send_message(&id, body.message, ctx).await?;
    Ok(Json(ConversationResponse {
        conversation: reply.conversation,
        result: Some(reply.result),
    }))
}

/// Reads one conversation or says it does not exist.
pub(crate) async fn load(store: &Store, id: String) -> Result<app::models::Conversation, ApiError> {
    store
        .get_conversation(id.clone())
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("conversation {id:?} not found")))
}

/// Validates a list query and reads the page of list items; shared by the
/// REST handler and server-side rendering, so both answer the same query
/// the same way.
pub(crate) async fn list_page(store: &Store, q: ListQuery) -> Result<ConversationList, ApiError> {
    let (page, summary) = store.list_items(page_request(q)?).await?;
    Ok(ConversationList {
        conversations: page.conversations,
        summary,
        next_cursor: page.next.map(|n| n.to_string()),
    })
}

/// The same page with whole conversations (`?view=full`, A2A `ListTasks`).
pub(crate) async fn full_page(
    store: &Store,
    q: ListQuery,
) -> Result<FullConversationList, ApiError> {
    let (page, summary) = store.list_conversations(page_request(q)?).await?;
    Ok(FullConversationList {
        conversations: page.conversations,
        summary,
        next_cursor: page.next.map(|n| n.to_string()),
    })
}

/// Checks a list query's parameters and turns them into a store request.
fn page_request(q: ListQuery) -> Result<PageRequest, ApiError> {
    let limit = q.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(ApiError::BadRequest(format!(
            "limit must be between 1 and {MAX_LIMIT}, got {limit}"
        )));
    }
    let before = match q.cursor.as_deref() {
        None | Some("") => None,
        Some(c) => Some(c.parse::<i64>().ok().filter(|n| *n > 0).ok_or_else(|| {
            ApiError::BadRequest(format!(
                "cursor {c:?} is not one this server issued: pass the next_cursor of the previous page"
            ))
        })?),
    };
    let status = match q.status.as_deref() {
        None | Some("") | Some("all") => None,
        Some(s) => Some(ConversationStatus::parse(s).ok_or_else(|| {
            let valid = ConversationStatus::ALL.map(|s| s.as_str()).join(", ");
            ApiError::BadRequest(format!("unknown status {s:?}: use one of {valid}, or all"))
        })?),
    };
    let text = q.q.map(|t| t.trim().to_string()).filter(|t| !t.is_empty());
    if text.as_ref().is_some_and(|t| t.chars().count() > 200) {
        return Err(ApiError::BadRequest(
            "q is longer than 200 characters: search for a shorter text".into(),
        ));
    }
    Ok(PageRequest {
        limit,
        before,
        status,
        text,
    })
}
