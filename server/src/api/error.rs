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
pub enum ApiError {
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
    #[error("{0}")]
    NotImplemented(String),
    /// 409 while a conversation waits for approval: the body carries the approval.
    #[error("{message}")]
    WaitingApproval {
        message: String,
        approval: Box<PendingApproval>,
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
    Store(#[from] StoreError),
}

impl From<EngineError> for ApiError {
    fn from(e: EngineError) -> Self {
        match e {
            EngineError::NotFound(m) => ApiError::NotFound(m),
            EngineError::Invalid(m) => ApiError::BadRequest(m),
            e @ EngineError::Busy(_) => ApiError::Conflict(e.to_string()),
            e @ EngineError::AlreadyDecided { .. } => ApiError::Conflict(e.to_string()),
            ref e @ EngineError::WaitingApproval { ref approval, .. } => {
                ApiError::WaitingApproval {
                    message: e.to_string(),
                    approval: approval.clone(),
                }
            }
            EngineError::LlmUnavailable(m) => ApiError::Unavailable(m),
            EngineError::Llm {
                error,
                conversation,
            } => ApiError::Upstream {
                status: error.http_status(),
                message: error.to_string(),
                conversation: Some(conversation),
            },
            EngineError::Store(s) => ApiError::Store(s),
            EngineError::Task(m) => ApiError::Internal(m),
            EngineError::ConfigChanged(m) => ApiError::Conflict(m),
        }
    }
}

impl ApiError {
    pub fn status(&self) -> StatusCode {
        match self {
            ApiError::BadRequest(_) => StatusCode::BAD_REQUEST,
            ApiError::NotFound(_) => StatusCode::NOT_FOUND,
            ApiError::MethodNotAllowed(_) => StatusCode::METHOD_NOT_ALLOWED,
            ApiError::Conflict(_) => StatusCode::CONFLICT,
            ApiError::PayloadTooLarge(_) => StatusCode::PAYLOAD_TOO_LARGE,
            ApiError::NotImplemented(_) => StatusCode::NOT_IMPLEMENTED,
            ApiError::WaitingApproval { .. } => StatusCode::CONFLICT,
            ApiError::Unavailable(_) => StatusCode::SERVICE_UNAVAILABLE,
            ApiError::Upstream { status, .. } => {
                StatusCode::from_u16(*status).unwrap_or(StatusCode::BAD_GATEWAY)
            }
            ApiError::Internal(_) | ApiError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The text the client sees.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::Store(_) => {
                "internal storage error; the details are in the agent's log (search it for this request's X-Session-ID)"
                    .into()
            }
            ApiError::Internal(_) => {
                "internal error; the details are in the agent's log (search it for this request's X-Session-ID)".into()
            }
            other => other.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        match &self {
            ApiError::Store(e) => tracing::error!(error = %e, "request failed"),
            ApiError::Internal(e) => tracing::error!(error = %e, "request failed"),
            _ => {}
        }
        let status = self.status();
        let error = self.public_message();
        match self {
            ApiError::WaitingApproval { approval, .. } => (
                status,
                Json(serde_json::json!({"error": error, "pending_approval": approval})),
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
            _ => (status, Json(ErrorBody { error })).into_response(),
        }
    }
}

impl From<ApiError> for app::api::ApiError {
    fn from(e: ApiError) -> Self {
        match &e {
            ApiError::Store(inner) => tracing::error!(error = %inner, "page data failed"),
            ApiError::Internal(inner) => tracing::error!(error = %inner, "page data failed"),
            _ => {}
        }
        app::api::ApiError {
            status: e.status().as_u16(),
            message: e.public_message(),
        }
    }
}
