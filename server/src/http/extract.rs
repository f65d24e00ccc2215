//! Request extractors whose rejections speak the API's error format.
//!
//! axum's own `Json` and `Query` answer bad input with plain text; ours turn
//! every rejection into `{"error": ...}` with the same status and a sentence
//! that says what to send instead.

use super::error::ApiError;
use axum::body::Bytes;
use axum::extract::{FromRequest, FromRequestParts, Request};
use axum::http::StatusCode;
use axum::http::request::Parts;
use serde::de::DeserializeOwned;

/// A JSON body. An empty body reads as `{}`, so optional-only bodies may be
/// left out. The `Content-Type` is not enforced: old clients omit it.
pub(crate) struct ApiJson<T>(pub T);

impl<S, T> FromRequest<S> for ApiJson<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let bytes = Bytes::from_request(req, state).await.map_err(|rejection| {
            if rejection.status() == StatusCode::PAYLOAD_TOO_LARGE {
                ApiError::PayloadTooLarge(
                    "the request body is larger than the agent accepts (max_body_bytes in agent.yaml, 1 MiB by default)"
                        .into(),
                )
            } else {
                ApiError::BadRequest(format!("could not read the request body: {}", rejection.body_text()))
            }
        })?;
        let text: &[u8] = if bytes.iter().all(u8::is_ascii_whitespace) {
            b"{}"
        } else {
            &bytes
        };
        // The field a type error is about, named beside serde's words.
        let mut de = serde_json::Deserializer::from_slice(text);
        let value = serde_path_to_error::deserialize(&mut de).map_err(|e| {
            let at = e.path().to_string();
            let inner = e.into_inner();
            match at.as_str() {
                "" | "." => ApiError::BadRequest(format!("invalid JSON body: {inner}")),
                _ => ApiError::BadRequest(format!("invalid JSON body: {inner} (at `{at}`)")),
            }
        })?;
        de.end()
            .map_err(|e| ApiError::BadRequest(format!("invalid JSON body: {e}")))?;
        Ok(ApiJson(value))
    }
}

/// A body the handler has no use for, read to its end (up to the body
/// limit) and dropped. hyper keeps a connection alive after the response
/// only when the request's body was read or can be drained at once: a body
/// still on its way (a client that writes headers and body separately)
/// closes the connection, and a client that already sent its next request
/// on it sees "server disconnected". Routes whose body carries nothing we
/// read (A2A's `:cancel` body repeats the id of the path) take this.
pub(crate) struct Drained;

impl<S: Send + Sync> FromRequest<S> for Drained {
    type Rejection = std::convert::Infallible;

    async fn from_request(req: Request, state: &S) -> Result<Self, Self::Rejection> {
        // Too large or cut: hyper closes the connection, as it should.
        let _ = Bytes::from_request(req, state).await;
        Ok(Drained)
    }
}

/// A query string decoded into `T`.
pub(crate) struct ApiQuery<T>(pub T);

impl<S, T> FromRequestParts<S> for ApiQuery<T>
where
    S: Send + Sync,
    T: DeserializeOwned,
{
    type Rejection = ApiError;

    async fn from_request_parts(parts: &mut Parts, _state: &S) -> Result<Self, ApiError> {
        let query = parts.uri.query().unwrap_or("");
        serde_urlencoded_from(query)
            .map(ApiQuery)
            .map_err(|e| ApiError::BadRequest(format!("invalid query string: {e}")))
    }
}

fn serde_urlencoded_from<T: DeserializeOwned>(query: &str) -> Result<T, String> {
    axum::extract::Query::<T>::try_from_uri(
        &format!("/?{query}").parse().map_err(|e| format!("{e}"))?,
    )
    .map(|q| q.0)
    .map_err(|e| {
        e.body_text()
            .trim_start_matches("Failed to deserialize query string: ")
            .to_string()
    })
}
