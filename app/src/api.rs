//! How the UI reads and changes data: one function per REST call.
//!
//! In the browser every function is a real HTTP call (gloo-net) to the same
//! public REST API that other clients use, so the UI never depends on a
//! private back door. During server-side rendering the same functions call the
//! server's store in-process through [`UiBackend`], which the server provides
//! as Leptos context; rendering a page therefore costs no loopback HTTP hop.
//! The functions return [`ApiError`], which is serialisable so that a failed
//! load rendered on the server hydrates into the same error in the browser.

use crate::models::{
    AgentInfo, ApprovalList, ApprovalQuery, Conversation, ConversationList, ConversationResponse,
    ListQuery, ToolList, Viewer,
};
use crate::pipeline::PipelineView;
use serde::{Deserialize, Serialize};
use std::fmt;

/// A failed API call: the HTTP status (0 for a network failure) and the
/// server's own explanation.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ApiError {
    pub status: u16,
    pub message: String,
}

impl fmt::Display for ApiError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.status == 0 {
            write!(f, "The server could not be reached: {}", self.message)
        } else {
            write!(f, "{} (HTTP {})", self.message, self.status)
        }
    }
}

impl std::error::Error for ApiError {}

/// Builds the query string of `GET /conversations`.
pub fn list_query_string(q: &ListQuery) -> String {
    query_string(&[
        ("limit", q.limit.map(|l| l.to_string())),
        ("cursor", q.cursor.clone()),
        ("status", q.status.clone()),
        ("q", q.q.clone()),
        ("view", q.view.clone()),
    ])
}

/// The query string of `GET /approvals` (empty, or starting with `?`).
pub fn approval_query_string(q: &ApprovalQuery) -> String {
    query_string(&[
        ("limit", q.limit.map(|l| l.to_string())),
        ("cursor", q.cursor.clone()),
    ])
}

/// `?name=value&...` of the parameters given (values percent-encoded);
/// empty when none is.
fn query_string(params: &[(&str, Option<String>)]) -> String {
    let parts: Vec<String> = params
        .iter()
        .filter_map(|(name, value)| {
            value
                .as_ref()
                .map(|v| format!("{name}={}", encode_component(v)))
        })
        .collect();
    if parts.is_empty() {
        String::new()
    } else {
        format!("?{}", parts.join("&"))
    }
}

/// Percent-encodes everything but RFC 3986 unreserved characters.
fn encode_component(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for b in s.bytes() {
        if b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.' | b'~') {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

#[cfg(feature = "ssr")]
mod backend {
    use super::ApiError;
    use crate::models::{
        AgentInfo, ApprovalList, ApprovalQuery, Conversation, ConversationList, DeliveryList,
        LinkView, ListQuery, QuestionPage, ToolList,
    };
    use crate::pipeline::PipelineView;
    use std::future::Future;
    use std::pin::Pin;
    use std::sync::Arc;

    /// A boxed, sendable future, as the server's handlers need.
    pub type BoxFuture<T> = Pin<Box<dyn Future<Output = T> + Send + 'static>>;

    /// What server-side rendering needs from the server. Implemented by the
    /// server over its store and provided as context for every page render.
    pub trait UiBackend: Send + Sync + 'static {
        fn list_conversations(&self, q: ListQuery)
        -> BoxFuture<Result<ConversationList, ApiError>>;
        fn get_conversation(&self, id: String) -> BoxFuture<Result<Conversation, ApiError>>;
        fn agent_info(&self) -> BoxFuture<Result<AgentInfo, ApiError>>;
        fn list_approvals(&self, q: ApprovalQuery) -> BoxFuture<Result<ApprovalList, ApiError>>;
        fn list_questions(&self, q: ApprovalQuery) -> BoxFuture<Result<QuestionPage, ApiError>>;
        fn list_tools(&self) -> BoxFuture<Result<ToolList, ApiError>>;
        fn list_grants(&self) -> BoxFuture<Result<crate::models::GrantList, ApiError>>;
        fn pipeline(&self) -> BoxFuture<Result<PipelineView, ApiError>>;
        fn notifications(&self) -> BoxFuture<Result<DeliveryList, ApiError>>;
        fn link(&self, token: String) -> BoxFuture<Result<LinkView, ApiError>>;
    }

    /// The context handle.
    pub type SharedBackend = Arc<dyn UiBackend>;

    pub(crate) fn backend() -> Result<SharedBackend, ApiError> {
        leptos::prelude::use_context::<SharedBackend>().ok_or_else(|| ApiError {
            status: 500,
            message: "the UI backend is not provided to the renderer".into(),
        })
    }
}

#[cfg(feature = "ssr")]
pub use backend::{BoxFuture, SharedBackend, UiBackend};

/// `GET /conversations`.
pub async fn list_conversations(q: ListQuery) -> Result<ConversationList, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.list_conversations(q).await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json(&format!("/conversations{}", list_query_string(&q))).await
    }
}

/// `GET /conversations/:id`.
pub async fn get_conversation(id: String) -> Result<Conversation, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.get_conversation(id).await
    }
    #[cfg(not(feature = "ssr"))]
    {
        let r: crate::models::ConversationResponse =
            client::get_json(&format!("/conversations/{}", encode_component(&id))).await?;
        Ok(r.conversation)
    }
}

/// `GET /agent`.
pub async fn agent_info() -> Result<AgentInfo, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.agent_info().await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json("/agent").await
    }
}

/// `GET /auth/me`: who is looking. While rendering, the server provides
/// it as context (it knows the request's identity).
pub async fn viewer() -> Result<Viewer, ApiError> {
    #[cfg(feature = "ssr")]
    {
        leptos::prelude::use_context::<Viewer>().ok_or_else(|| ApiError {
            status: 500,
            message: "the viewer is not provided to the renderer".into(),
        })
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json("/auth/me").await
    }
}

/// `GET /approvals`: a page of the pending approvals, oldest first, with
/// their total.
pub async fn list_approvals(q: ApprovalQuery) -> Result<ApprovalList, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.list_approvals(q).await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json(&format!("/approvals{}", approval_query_string(&q))).await
    }
}

/// `GET /questions`: the questions waiting for an answer, oldest first
/// (paged like the approvals).
pub async fn list_questions(q: ApprovalQuery) -> Result<crate::models::QuestionPage, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.list_questions(q).await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json(&format!("/questions{}", approval_query_string(&q))).await
    }
}

/// How many things wait for someone: approvals waiting for a decision
/// and questions waiting for an answer, as "Waiting for you" lists them
/// (`GET /approvals?limit=0` and `GET /questions?limit=0`).
pub async fn count_waiting() -> Result<u64, ApiError> {
    let q = || ApprovalQuery {
        limit: Some(0),
        cursor: None,
    };
    let approvals = list_approvals(q()).await?.total;
    let questions = list_questions(q()).await?.total;
    Ok(approvals.saturating_add(questions))
}

/// `GET /tools`.
pub async fn list_tools() -> Result<ToolList, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.list_tools().await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json("/tools").await
    }
}

/// `GET /grants`: the live grants (REACH.md §3).
pub async fn list_grants() -> Result<crate::models::GrantList, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.list_grants().await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json("/grants").await
    }
}

/// `POST /tools/:name/accept` (admin): accepts a held tool's changed
/// definition (POLICY.md §4) or a sub-agent's held card, the one of
/// `digest` (what the page showed).
pub async fn accept_tool(
    name: String,
    digest: Option<String>,
) -> Result<serde_json::Value, ApiError> {
    #[cfg(feature = "ssr")]
    {
        let _ = (name, digest);
        Err(browser_only())
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::post_json(
            &format!("/tools/{}/accept", encode_component(&name)),
            &serde_json::json!({ "digest": digest }),
        )
        .await
    }
}

/// `GET /notifications`: the newest deliveries and counts.
pub async fn list_notifications() -> Result<crate::models::DeliveryList, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.notifications().await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json("/notifications").await
    }
}

/// `POST /notifications/:id/retry` (admin): sends a dead letter again.
pub async fn retry_notification(id: String) -> Result<serde_json::Value, ApiError> {
    #[cfg(feature = "ssr")]
    {
        let _ = id;
        Err(browser_only())
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::post_json(
            &format!("/notifications/{}/retry", encode_component(&id)),
            &serde_json::json!({}),
        )
        .await
    }
}

/// `GET /links/:token`: what a notification's link opens (changes nothing).
pub async fn link_view(token: String) -> Result<crate::models::LinkView, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.link(token).await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json(&format!("/links/{}", encode_component(&token))).await
    }
}

/// `POST /links/:token`: decides through the link (`approved` only for an
/// open link).
pub async fn use_link(
    token: String,
    approved: Option<bool>,
    reason: Option<String>,
) -> Result<ConversationResponse, ApiError> {
    #[cfg(feature = "ssr")]
    {
        let _ = (token, approved, reason);
        Err(browser_only())
    }
    #[cfg(not(feature = "ssr"))]
    {
        let mut body = serde_json::json!({});
        if let Some(a) = approved {
            body["approved"] = a.into();
        }
        if let Some(r) = reason.filter(|r| !r.trim().is_empty()) {
            body["reason"] = r.into();
        }
        client::post_json(&format!("/links/{}", encode_component(&token)), &body).await
    }
}

/// `GET /pipeline`: the configured orchestration tree.
pub async fn get_pipeline() -> Result<PipelineView, ApiError> {
    #[cfg(feature = "ssr")]
    {
        backend::backend()?.pipeline().await
    }
    #[cfg(not(feature = "ssr"))]
    {
        client::get_json("/pipeline").await
    }
}

/// An error for calls only the browser makes.
#[cfg(feature = "ssr")]
fn browser_only() -> ApiError {
    ApiError {
        status: 500,
        message: "this action is taken from the browser, not while rendering".into(),
    }
}

/// `POST /conversations/:id/messages`.
pub async fn send_message(id: String, message: String) -> Result<ConversationResponse, ApiError> {
    #[cfg(feature = "ssr")]
    {
        let _ = (id, message);
        Err(browser_only())
    }
    #[cfg(not(feature = "ssr"))]
    {
        let body = crate::models::SendMessage { message };
        client::post_json(
            &format!("/conversations/{}/messages", encode_component(&id)),
            &body,
        )
        .await
    }
}

/// `POST /approvals/:uuid`.
pub async fn decide(
    uuid: String,
    approved: bool,
    reason: Option<String>,
    arguments: Option<serde_json::Value>,
) -> Result<ConversationResponse, ApiError> {
    #[cfg(feature = "ssr")]
    {
        let _ = (uuid, approved, reason, arguments);
        Err(browser_only())
    }
    #[cfg(not(feature = "ssr"))]
    {
        let body = crate::models::ApprovalDecision {
            approved,
            reason,
            arguments,
            grant: None,
        };
        client::post_json(&format!("/approvals/{}", encode_component(&uuid)), &body).await
    }
}

/// `POST /conversations` with no message. Only the browser creates
/// conversations; the server never does so while rendering.
pub async fn create_conversation() -> Result<Conversation, ApiError> {
    #[cfg(feature = "ssr")]
    {
        Err(browser_only())
    }
    #[cfg(not(feature = "ssr"))]
    {
        let body = crate::models::CreateConversation::default();
        let r: crate::models::ConversationResponse =
            client::post_json("/conversations", &body).await?;
        Ok(r.conversation)
    }
}

#[cfg(all(not(feature = "ssr"), feature = "hydrate"))]
mod client {
    //! Browser HTTP. gloo-net futures are not `Send`; Leptos resources need
    //! `Send` futures, and the browser is single-threaded, so `SendWrapper`
    //! is sound here.
    use super::ApiError;
    use crate::models::ErrorBody;
    use gloo_net::http::{Request, Response};
    use send_wrapper::SendWrapper;
    use serde::{Serialize, de::DeserializeOwned};

    /// This browser's session id, kept in `localStorage` (made once with
    /// `crypto.randomUUID()`): every request carries it as `X-Session-ID`,
    /// so the server's logs group a browser's work, and in auth mode none
    /// a quorum counts one vote per browser (POLICY.md §2), not one per
    /// click. `None` where storage is off (each request then gets its own).
    fn session_id() -> Option<String> {
        const KEY: &str = "stopgo-session-id";
        let window = web_sys::window()?;
        let storage = window.local_storage().ok()??;
        if let Ok(Some(id)) = storage.get_item(KEY) {
            return Some(id);
        }
        let id = window.crypto().ok()?.random_uuid();
        storage.set_item(KEY, &id).ok()?;
        Some(id)
    }

    fn with_session(req: gloo_net::http::RequestBuilder) -> gloo_net::http::RequestBuilder {
        match session_id() {
            Some(id) => req.header("X-Session-ID", &id),
            None => req,
        }
    }

    pub async fn get_json<T: DeserializeOwned>(path: &str) -> Result<T, ApiError> {
        let path = path.to_string();
        SendWrapper::new(async move {
            let resp = with_session(Request::get(&path))
                .header("Accept", "application/json")
                .header("X-Stopgo-Client", "ui")
                .send()
                .await
                .map_err(network)?;
            decode(resp).await
        })
        .await
    }

    pub async fn post_json<B: Serialize, T: DeserializeOwned>(
        path: &str,
        body: &B,
    ) -> Result<T, ApiError> {
        let path = path.to_string();
        let body = serde_json::to_string(body).map_err(|e| ApiError {
            status: 0,
            message: e.to_string(),
        })?;
        SendWrapper::new(async move {
            let resp = with_session(Request::post(&path))
                .header("Content-Type", "application/json")
                .header("Accept", "application/json")
                .header("X-Stopgo-Client", "ui")
                .body(body)
                .map_err(network)?
                .send()
                .await
                .map_err(network)?;
            decode(resp).await
        })
        .await
    }

    fn network(e: gloo_net::Error) -> ApiError {
        ApiError {
            status: 0,
            message: e.to_string(),
        }
    }

    async fn decode<T: DeserializeOwned>(resp: Response) -> Result<T, ApiError> {
        let status = resp.status();
        let text = resp.text().await.map_err(network)?;
        if resp.ok() {
            serde_json::from_str(&text).map_err(|e| ApiError {
                status,
                message: format!("unexpected response from the server: {e}"),
            })
        } else {
            let message = serde_json::from_str::<ErrorBody>(&text)
                .map(|b| b.error)
                .unwrap_or_else(|_| format!("the server answered {status}"));
            Err(ApiError { status, message })
        }
    }
}

#[cfg(all(not(feature = "ssr"), not(feature = "hydrate")))]
mod client {
    //! Neither `ssr` nor `hydrate`: a plain `cargo check` of the crate. There
    //! is no transport, so every call says so.
    use super::ApiError;
    use serde::{Serialize, de::DeserializeOwned};

    fn unavailable() -> ApiError {
        ApiError {
            status: 0,
            message: "built without the `ssr` or `hydrate` feature: no transport".into(),
        }
    }

    pub async fn get_json<T: DeserializeOwned>(_path: &str) -> Result<T, ApiError> {
        Err(unavailable())
    }

    pub async fn post_json<B: Serialize, T: DeserializeOwned>(
        _path: &str,
        _body: &B,
    ) -> Result<T, ApiError> {
        Err(unavailable())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn list_query_string_encodes_every_part() {
        assert_eq!(list_query_string(&ListQuery::default()), "");
        let q = ListQuery {
            limit: Some(20),
            cursor: Some("a b&c".into()),
            status: Some("waiting_approval".into()),
            q: None,
            view: None,
        };
        assert_eq!(
            list_query_string(&q),
            "?limit=20&cursor=a%20b%26c&status=waiting_approval"
        );
        let a = crate::models::ApprovalQuery {
            limit: Some(0),
            cursor: Some("x/y".into()),
        };
        assert_eq!(approval_query_string(&a), "?limit=0&cursor=x%2Fy");
        assert_eq!(
            approval_query_string(&crate::models::ApprovalQuery::default()),
            ""
        );
    }

    #[test]
    fn api_error_reads_as_a_sentence() {
        let e = ApiError {
            status: 404,
            message: "conversation x not found".into(),
        };
        assert_eq!(e.to_string(), "conversation x not found (HTTP 404)");
        let e = ApiError {
            status: 0,
            message: "offline".into(),
        };
        assert!(e.to_string().starts_with("The server could not be reached"));
    }
}
