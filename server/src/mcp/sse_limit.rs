//! A result too large for an SSE event, named like any other oversized
//! result.
//!
//! Over Streamable HTTP a server may answer a call with an SSE stream (the
//! SDKs' servers do). `rmcp` stops reading an event over
//! [`super::frames::MAX_FRAME_BYTES`] and then ends the stream with no
//! answer, so the call failed as "the MCP server stopped during the call
//! (Transport closed)" and the server was marked down: a 40 MB result sent
//! as text and as structured content (one 80 MB event) read as a crash.
//! [`Sized`] wraps the HTTP client `rmcp` uses: when the answer to a
//! request's POST meets that cap, the stream ends instead with an error
//! response for that request, marked as [`super::frames`] marks an
//! oversized result, so the call fails at once with "the tool's result is
//! more than N MB, over the M MB limit" and the session stays up.

use futures_util::StreamExt;
use futures_util::stream::BoxStream;
use reqwest::header::{HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::streamable_http_client::{
    SseError, StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use serde_json::Value;
use sse_stream::Sse;
use std::collections::HashMap;
use std::sync::Arc;

type Events = BoxStream<'static, Result<Sse, SseError>>;
type Posted<E> = Result<StreamableHttpPostResponse, StreamableHttpError<E>>;

/// How `rmcp` words an SSE event over its cap (its error type is private).
const EVENT_TOO_LARGE: &str = "SSE event exceeded the maximum size";

/// An HTTP client whose SSE answers name an oversized result.
#[derive(Clone)]
pub(crate) struct Sized<C>(pub(crate) C);

impl<C: StreamableHttpClient + Sync> StreamableHttpClient for Sized<C> {
    type Error = C::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Posted<C::Error> {
        let mut custom_headers = custom_headers;
        super::keyed::add_header(&message, &mut custom_headers);
        let id = request_id(&message);
        let r = self
            .0
            .post_message(uri, message, session_id, auth_header, custom_headers)
            .await;
        sized(id, r)
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Posted<C::Error> {
        let mut custom_headers = custom_headers;
        super::keyed::add_header(&message, &mut custom_headers);
        let id = request_id(&message);
        let r = self
            .0
            .post_message_with_max_sse_event_size(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await;
        sized(id, r)
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Posted<C::Error> {
        let mut custom_headers = custom_headers;
        super::keyed::add_header(&message, &mut custom_headers);
        let id = request_id(&message);
        let r = self
            .0
            .post_message_with_response_limits(
                uri,
                message,
                session_id,
                auth_header,
                custom_headers,
                limits,
            )
            .await;
        sized(id, r)
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), StreamableHttpError<C::Error>> {
        self.0
            .delete_session(uri, session_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        self.0
            .get_stream(uri, session_id, last_event_id, auth_header, custom_headers)
            .await
    }

    async fn get_stream_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<Events, StreamableHttpError<C::Error>> {
        self.0
            .get_stream_with_max_sse_event_size(
                uri,
                session_id,
                last_event_id,
                auth_header,
                custom_headers,
                max_sse_event_size,
            )
            .await
    }
}

/// The id of a request (its answer is what may be too large).
fn request_id(message: &ClientJsonRpcMessage) -> Option<Value> {
    match message {
        ClientJsonRpcMessage::Request(r) => serde_json::to_value(&r.id).ok(),
        _ => None,
    }
}

/// The POST's answer, its SSE stream watched for an event over the cap.
fn sized<E: std::error::Error + Send + Sync + 'static>(
    id: Option<Value>,
    posted: Posted<E>,
) -> Posted<E> {
    match (id, posted) {
        (Some(id), Ok(StreamableHttpPostResponse::Sse(events, session))) => Ok(
            StreamableHttpPostResponse::Sse(answered(events, id), session),
        ),
        (_, other) => other,
    }
}

/// `events`, with an event over the cap replaced by an error response to
/// request `id` naming the size, after which the stream ends.
fn answered(events: Events, id: Value) -> Events {
    events
        .scan(false, move |ended, item| {
            let next = match item {
                _ if *ended => None,
                Err(e) if e.to_string().contains(EVENT_TOO_LARGE) => {
                    *ended = true;
                    let data = super::frames::refusal_more_than(id.clone());
                    Some(Ok(Sse {
                        event: Some("message".into()),
                        data: data.and_then(|d| String::from_utf8(d).ok()),
                        id: None,
                        retry: None,
                    }))
                }
                other => Some(other),
            };
            futures_util::future::ready(next)
        })
        .boxed()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn an_event_over_the_cap_becomes_the_requests_error() {
        let too_large: Box<dyn std::error::Error + Send + Sync> =
            format!("{EVENT_TOO_LARGE} of 67108864 bytes").into();
        let events: Events = futures_util::stream::iter(vec![
            Ok(Sse::default().data("first")),
            Err(SseError::Body(too_large)),
            Ok(Sse::default().data("never")),
        ])
        .boxed();
        let out: Vec<_> = answered(events, serde_json::json!(4)).collect().await;
        assert_eq!(out.len(), 2);
        let data = out[1].as_ref().unwrap().data.clone().unwrap();
        let v: Value = serde_json::from_str(&data).unwrap();
        assert_eq!(v["id"], 4);
        let e: rmcp::model::ErrorData = serde_json::from_value(v["error"].clone()).unwrap();
        assert_eq!(
            e.message,
            "the tool's result is more than 67.1 MB, over the 8 MB limit"
        );
        assert!(super::super::frames::replaced(&e).is_some());
    }
}
