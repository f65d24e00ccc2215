//! The one error type at the HTTP edge.
//!
//! Client mistakes are echoed back in plain words with the right status, so
//! the caller can fix the request. Internal failures are logged in full and
//! answered with a generic message: storage paths and SQL never leak.

use crate::store::StoreError;
use app::models::ErrorBody;
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
    #[error(transparent)]
    Store(#[from] StoreError),
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
            ApiError::Store(_) => StatusCode::INTERNAL_SERVER_ERROR,
        }
    }

    /// The text the client sees.
    pub fn public_message(&self) -> String {
        match self {
            ApiError::Store(_) => {
                "internal storage error; the details are in the agent's log (search it for this request's X-Session-ID)"
                    .into()
            }
            other => other.to_string(),
        }
    }
}

impl IntoResponse for ApiError {
    fn into_response(self) -> Response {
        if let ApiError::Store(e) = &self {
            tracing::error!(error = %e, "request failed");
        }
        let body = ErrorBody {
            error: self.public_message(),
        };
        (self.status(), Json(body)).into_response()
    }
}

impl From<ApiError> for app::api::ApiError {
    fn from(e: ApiError) -> Self {
        if let ApiError::Store(inner) = &e {
            tracing::error!(error = %inner, "page data failed");
        }
        app::api::ApiError {
            status: e.status().as_u16(),
            message: e.public_message(),
        }
    }
}
