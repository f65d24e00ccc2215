//! `/questions`: what tools asked the human (QUESTIONS.md §2), listed like
//! the approvals inbox, read one by one, and answered.

use super::approvals::{InboxParams, page_limit, unknown_cursor};
use crate::engine::Answer;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::extract::{ApiJson, ApiQuery};
use crate::http::state::AppState;
use app::models::{AnswerQuestion, ApprovalQuery, ConversationResponse, Question, QuestionPage};
use axum::Json;
use axum::extract::{Path, State};

/// `GET /questions?limit=&cursor=` → `{"questions": [...], "total": N,
/// "next_cursor"?}`: the pending questions, oldest first, paged like
/// `GET /approvals`.
pub(crate) async fn list(
    State(state): State<AppState>,
    ApiQuery(p): ApiQuery<InboxParams>,
) -> Result<Json<QuestionPage>, ApiError> {
    Ok(Json(pending(&state.store, p.query()).await?))
}

/// A page of the pending questions, oldest first, with their total.
pub(crate) async fn pending(
    store: &crate::store::Store,
    q: ApprovalQuery,
) -> Result<QuestionPage, ApiError> {
    let limit = page_limit(q.limit)?;
    let cursor = q.cursor.filter(|c| !c.is_empty());
    // One more than the page, to know whether another follows.
    let (mut rows, total) = store
        .pending_questions(cursor.clone(), limit.saturating_add(1))
        .await?
        .ok_or_else(|| unknown_cursor(cursor))?;
    let more = rows.len() > limit as usize;
    rows.truncate(limit as usize);
    let questions: Vec<Question> = rows.into_iter().map(|q| q.question).collect();
    let next_cursor = more
        .then(|| questions.last().map(|q| q.uuid.clone()))
        .flatten();
    Ok(QuestionPage {
        questions,
        total,
        next_cursor,
    })
}

/// `GET /questions/:uuid` → the question, whatever its status.
pub(crate) async fn get(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
) -> Result<Json<Question>, ApiError> {
    state
        .store
        .question(&uuid)
        .await?
        .map(|q| Json(q.question))
        .ok_or_else(|| ApiError::NotFound(format!("question {uuid:?} not found")))
}

/// `POST /questions/:uuid` with `{"action": "accept", "content": {...}}`,
/// `{"action": "decline"}` or `{"action": "cancel"}` → `{"conversation",
/// "result"}` once the call went on (a round's retry ran, or the call on a
/// live session heard the answer).
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Caller(ctx): Caller,
    ApiJson(body): ApiJson<AnswerQuestion>,
) -> Result<Json<ConversationResponse>, ApiError> {
    let reply = state
        .engine
        .answer(
            &uuid,
            Answer {
                action: body.action,
                content: body.content,
            },
            ctx,
        )
        .await?;
    Ok(Json(ConversationResponse {
        conversation: reply.conversation,
        result: Some(reply.result),
    }))
}
