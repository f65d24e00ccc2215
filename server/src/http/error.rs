//! The one error type at the HTTP edge.
//!
//! Client mistakes are echoed back in plain words with the right status, so
//! the caller can fix the request. Internal failures are logged in full and
//! answered with a generic message: storage paths and SQL never leak.

use crate::engine::EngineError;
use crate::store::StoreError;
use app::models::{Conversation, ErrorBody, PendingApproval};
use axum::Json;
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};

/// Why a request failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum ApiError {
    #[error("{0}")]
    BadRequest(String),
    #[error("{0}")]
    NotFound(String),
    #[error("{0}")]
    MethodNotAllowed(String),
    #[error("{0}")]
    Conflict(String),
    #[error("{0}")]
    PayloadTooLarge(String),
    /// 401: no or bad credentials.
    #[error("{0}")]
    Unauthorized(String),
    /// 403: the caller may not do this (the message names the role).
    #[error("{0}")]
    Forbidden(String),
    /// 415: a state-changing body that is not JSON.
    #[error("{0}")]
    UnsupportedMediaType(String),
    /// 429: too many failed sign-ins from this address.
    #[error("too many failed sign-ins from this address: try again in {wait} s")]
    TooManyRequests { wait: u64 },
    /// 409 while a conversation waits for approval: the body carries the approval.
    #[error("{message}")]
    WaitingApproval {
        message: String,
        approval: Box<PendingApproval>,
    },
    /// 409 while a conversation waits for an answer: the body carries the question.
    #[error("{message}")]
    WaitingInput {
        message: String,
        question: Box<app::models::Question>,
    },
    /// 503: the agent cannot answer now (e.g. the model's key is missing).
    #[error("{0}")]
    Unavailable(String),
    /// 502/504: a model or tool upstream failed; the conversation (with the
    /// error recorded in it) comes along.
    #[error("{message}")]
    Upstream {
        status: u16,
        message: String,
        conversation: Option<Box<Conversation>>,
    },
    #[error("{0}")]
    Internal(String),
    #[error(transparent)]
    Store(StoreError),
}

impl From<StoreError> for ApiError {
    fn from(e: StoreError) -> Self {
        match e {
            StoreError::Unstorable(m) => ApiError::BadRequest(m),
            e @ StoreError::LeaseLost(_) => ApiError::Conflict(e.to_string()),
            e => ApiError::Store(e),
        }
    }
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(m) => ApiError::NotFound(m),
            EngineError::Invalid(m) => ApiError::BadRequest(m),
            e @ EngineError::Busy(_) => ApiError::Conflict(e.to_string()),
            e @ (EngineError::AlreadyDecided { .. }
            | EngineError::AlreadyAnswered { .. }
            | EngineError::AlreadyVoted { .. }
            | EngineError::LinkUsed) => ApiError::Conflict(e.to_string()),
            ref e @ EngineError::WaitingApproval { ref approval, .. } => {
                ApiError::WaitingApproval {
                    message: e.to_string(),
                    approval: approval.clone(),
                }
            }
            ref e @ EngineError::WaitingInput { ref question, .. } => ApiError::WaitingInput {
                message: e.to_string(),
                question: question.clone(),
            },
            EngineError::LlmUnavailable(m) => ApiError::Unavailable(m),
            EngineError::Llm {
                error,
                conversation,
            } => ApiError::Upstream {
                status: error.http_status(),
                message: error.to_string(),
                conversation: Some(conversation),
            },
            EngineError::Store(s) => s.into(),
            EngineError::Task(m) => ApiError::Internal(m),
            EngineError::ConfigChanged(m) => ApiError::Conflict(m),
            EngineError::Forbidden(m) => ApiError::Forbidden(m),
            e @ EngineError::Cancelled(_) => ApiError::Conflict(e.to_string()),
        }
    }
}

impl ApiError {
    pub(crate) fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::Unauthorized(_) => StatusCode::UNAUTHORIZED,
            ApiError::Forbidden(_) => StatusCode::FORBIDDEN,
            ApiError::UnsupportedMediaType(_) => StatusCode::UNSUPPORTED_MEDIA_TYPE,
            ApiError::TooManyRequests { .. } => StatusCode::TOO_MANY_REQUESTS,
            ApiError::WaitingApproval { .. } | ApiError::WaitingInput { .. } => {
                StatusCode::CONFLICT
            }
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Upstream { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY)
            }
            ApiError::Internal(_) | ApiError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// Whether the detail must stay in the log (AUTH.md §8).
    pub(crate) fn is_internal(&self) -> bool {
        matches!(self, ApiError::Internal(_) | ApiError::Store(_))
    }

    /// The text the client sees.
    pub(crate) fn public_message(&self) -> String {
        match self {
            ApiError::Store(_) | ApiError::Internal(_) => internal_message(&new_error_id()),
            other => other.to_string(),
        }
    }
}

/// A correlation id for an internal error: the client gets it, the log
/// line with the detail carries it.
pub(crate) fn new_error_id() -> String {
    crate::domain::ids::short_id()
}

/// What a client is told about an internal error.
pub(crate) fn internal_message(id: &str) -> String {
    format!("internal error (id {id}); the details are in the agent's log under error_id={id}")
}

/// Logs an internal error's detail under a fresh correlation id and
/// returns the id.
pub(crate) fn log_internal(detail: &dyn std::fmt::Display) -> String {
    let id = new_error_id();
    tracing::error!(error_id = %id, error = %detail, "request failed");
    id
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        let status = self.status();
        let error = match &self {
            ApiError::Store(e) => internal_message(&log_internal(e)),
            ApiError::Internal(e) => internal_message(&log_internal(e)),
            other => other.public_message(),
        };
        match self {
            ApiError::WaitingApproval { approval, .. } => (
                status,
                Json(serde_json::json!({"error": error, "pending_approval": approval})),
            )
                .into_response(),
            ApiError::WaitingInput { question, .. } => (
                status,
                Json(serde_json::json!({"error": error, "pending_question": question})),
            )
                .into_response(),
            ApiError::Upstream {
                conversation: Some(c),
                ..
            } => (
                status,
                Json(serde_json::json!({"error": error, "conversation": c})),
            )
                .into_response(),
            ApiError::TooManyRequests { wait } => {
                let mut r = (status, Json(ErrorBody { error })).into_response();
                r.headers_mut().insert(
                    axum::http::header::RETRY_AFTER,
                    axum::http::HeaderValue::from(wait),
                );
                r
            }
            ApiError::Unauthorized(_) => {
                let mut r = (status, Json(ErrorBody { error })).into_response();
                r.headers_mut().insert(
                    axum::http::header::WWW_AUTHENTICATE,
                    axum::http::HeaderValue::from_static("Bearer"),
                );
                r
            }
            _ => (status, Json(ErrorBody { error })).into_response(),
        }
    }
}

impl From<ApiError> for app::api::ApiError {
    fn from(e: ApiError) -> Self {
        let message = match &e {
            ApiError::Store(inner) => internal_message(&log_internal(inner)),
            ApiError::Internal(inner) => internal_message(&log_internal(inner)),
            other => other.public_message(),
        };
        app::api::ApiError {
            status: e.status().as_u16(),
            message,
        }
    }
}
