//! OAuth 2.0 client credentials for remote MCP servers (QUESTIONS.md §1:
//! `mcp_servers[].auth: {type: client_credentials, …}`).
//!
//! The secret goes only where the operator said: the configured
//! `token_url`, or the token endpoint of the configured `issuer` once the
//! MCP server's 401 leads there (`oauth_issuer`: RFC 9728, then RFC 8414 /
//! OpenID metadata of that issuer only). rmcp's `auth` feature does the
//! token request itself (the `oauth2` crate, `client_secret_post` or
//! `_basic` as the server advertises, with the RFC 8707 `resource`). Its `AuthClient`
//! renews tokens with a refresh token, which the client-credentials grant
//! does not issue, so the token's life is ours: [`OAuthHttp`] wraps the
//! transport's reqwest client, puts the cached token on every request,
//! asks for a new one shortly before it expires, and on a 401 discovers
//! (the first time) and retries once with a fresh token. One token serves
//! every call until then.
//!
//! The secret and the tokens are never logged: the log says that a token
//! was obtained, for which server, and for how long.

use crate::config::McpAuth;
use reqwest::header::{AUTHORIZATION, HeaderName, HeaderValue};
use rmcp::model::ClientJsonRpcMessage;
use rmcp::transport::auth::{AuthError, AuthorizationManager, ClientCredentialsConfig};
use rmcp::transport::streamable_http_client::{
    StreamableHttpClient, StreamableHttpError, StreamableHttpPostResponse,
    StreamableHttpResponseLimits,
};
use std::collections::HashMap;
use std::sync::Arc;
use std::time::{Duration, Instant};

/// How long a token is taken to live when the server does not say.
const UNSAID_LIFETIME: Duration = Duration::from_secs(300);
/// Renewal this long before expiry (at most half the token's life).
const RENEW_BEFORE: Duration = Duration::from_secs(30);
/// Bound on discovery and the token request together.
const TOKEN_TIMEOUT: Duration = Duration::from_secs(15);

/// One server's client credentials and the token they bought.
pub(crate) struct ClientCredentials {
    server: String,
    url: String,
    config: ClientCredentialsConfig,
    token_url: Option<String>,
    issuer: Option<String>,
    /// Metadata and token requests: bounded, never redirected, and only to
    /// the hosts above (the operator's), so no address filter is needed.
    http: reqwest::Client,
    state: tokio::sync::Mutex<State>,
}

#[derive(Default)]
struct State {
    /// Discovered (or given) endpoints, configured for the grant.
    manager: Option<AuthorizationManager>,
    /// The token, and when to renew it.
    token: Option<(String, Instant)>,
}

impl ClientCredentials {
    /// The credentials of the server `server` at `url`.
    pub(crate) fn new(server: &str, url: &str, auth: &McpAuth) -> ClientCredentials {
        let McpAuth::ClientCredentials {
            client_id,
            client_secret,
            scopes,
            token_url,
            issuer,
        } = auth;
        ClientCredentials {
            server: server.to_string(),
            url: url.to_string(),
            config: ClientCredentialsConfig::ClientSecret {
                client_id: client_id.clone(),
                client_secret: client_secret.expose().to_string(),
                scopes: scopes.clone(),
                // RFC 8707: the token is for this server.
                resource: Some(url.to_string()),
            },
            token_url: token_url.clone(),
            issuer: issuer.clone(),
            http: reqwest::Client::builder()
                .timeout(TOKEN_TIMEOUT)
                .connect_timeout(TOKEN_TIMEOUT)
                .redirect(reqwest::redirect::Policy::none())
                .build()
                .unwrap_or_default(),
            state: Default::default(),
        }
    }

    /// The token to send: the held one until it is due for renewal, else a
    /// new one when the token endpoint is known (configured, or discovered
    /// earlier); `None` before the first 401 tells where to get one.
    pub(crate) async fn current(&self) -> Result<Option<String>, String> {
        let mut state = self.state.lock().await;
        if let Some((token, renew_at)) = &state.token
            && Instant::now() < *renew_at
        {
            return Ok(Some(token.clone()));
        }
        if state.manager.is_none() && self.token_url.is_none() {
            return Ok(None);
        }
        self.obtain(&mut state, None).await.map(Some)
    }

    /// After a 401 (`challenge`: its `WWW-Authenticate`) to a request that
    /// carried `rejected`: a new token (another request's, if it renewed
    /// meanwhile).
    async fn renew(&self, challenge: &str, rejected: Option<&str>) -> Result<String, String> {
        let mut state = self.state.lock().await;
        if let Some((token, renew_at)) = &state.token
            && Some(token.as_str()) != rejected
            && Instant::now() < *renew_at
        {
            return Ok(token.clone());
        }
        self.obtain(&mut state, Some(challenge)).await
    }

    async fn obtain(&self, state: &mut State, challenge: Option<&str>) -> Result<String, String> {
        match tokio::time::timeout(TOKEN_TIMEOUT, self.exchange(state, challenge)).await {
            Ok(Ok(token)) => Ok(token),
            Ok(Err(e)) => Err(format!(
                "MCP server `{}`: no OAuth token (client credentials): {e}",
                self.server
            )),
            Err(_) => Err(format!(
                "MCP server `{}`: no OAuth token (client credentials): the authorization server did not answer within {}s",
                self.server,
                TOKEN_TIMEOUT.as_secs()
            )),
        }
    }

    async fn exchange(&self, state: &mut State, challenge: Option<&str>) -> Result<String, String> {
        if state.manager.is_none() {
            let metadata = match (&self.token_url, &self.issuer) {
                // Only the token endpoint is used by this grant.
                (Some(t), _) => serde_json::from_value(
                    serde_json::json!({"authorization_endpoint": t, "token_endpoint": t}),
                )
                .map_err(|e| e.to_string())?,
                (None, Some(issuer)) => {
                    super::oauth_issuer::issuer_metadata(&self.http, &self.url, issuer, challenge)
                        .await?
                }
                (None, None) => return Err("neither `auth.token_url` nor `auth.issuer` is configured: the client secret was not sent".into()),
            };
            let mut manager = AuthorizationManager::new(self.url.as_str())
                .await
                .map_err(|e| e.to_string())?;
            manager
                .with_client(self.http.clone())
                .map_err(|e| e.to_string())?;
            tracing::info!(server = %self.server, token_endpoint = %metadata.token_endpoint, "OAuth token endpoint");
            manager.set_metadata(metadata);
            manager
                .validate_client_credentials_metadata(&self.config)
                .map_err(|e| e.to_string())?;
            manager
                .configure_client_credentials(&self.config)
                .map_err(|e| e.to_string())?;
            state.manager = Some(manager);
        }
        let Some(manager) = state.manager.as_ref() else {
            return Err("the OAuth client is not configured".into());
        };
        let response = manager
            .exchange_client_credentials(&self.config)
            .await
            .map_err(|e| match e {
                AuthError::ClientCredentialsError(m) | AuthError::OAuthError(m) => m,
                e => e.to_string(),
            })?;
        use oauth2::TokenResponse;
        let token = response.access_token().secret().to_string();
        let lifetime = response.expires_in().unwrap_or(UNSAID_LIFETIME);
        let renew_at = Instant::now() + lifetime - RENEW_BEFORE.min(lifetime / 2);
        tracing::info!(server = %self.server, expires_in_s = lifetime.as_secs(), "OAuth token obtained (client credentials)");
        state.token = Some((token.clone(), renew_at));
        Ok(token)
    }
}

/// The transport's HTTP client with the server's OAuth token on every
/// request (unless the request carries its own `Authorization`: a
/// configured header or a forwarded operator bearer wins).
#[derive(Clone)]
pub(crate) struct OAuthHttp {
    pub(crate) http: reqwest::Client,
    pub(crate) credentials: Arc<ClientCredentials>,
}

type HttpError = StreamableHttpError<reqwest::Error>;

impl OAuthHttp {
    async fn authorized<T, F, Fut>(
        &self,
        given: Option<String>,
        headers: &HashMap<HeaderName, HeaderValue>,
        call: F,
    ) -> Result<T, HttpError>
    where
        F: Fn(Option<String>) -> Fut,
        Fut: Future<Output = Result<T, HttpError>>,
    {
        if given.is_some() || headers.contains_key(&AUTHORIZATION) {
            return call(given).await;
        }
        let failed = |m: String| StreamableHttpError::Auth(AuthError::ClientCredentialsError(m));
        let token = self.credentials.current().await.map_err(failed)?;
        match call(token.clone()).await {
            Err(StreamableHttpError::AuthRequired(challenge)) => {
                let fresh = self
                    .credentials
                    .renew(&challenge.www_authenticate_header, token.as_deref())
                    .await
                    .map_err(failed)?;
                call(Some(fresh)).await
            }
            other => other,
        }
    }
}

impl StreamableHttpClient for OAuthHttp {
    type Error = reqwest::Error;

    async fn post_message(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.authorized(auth_header, &custom_headers, |token| {
            self.http.post_message(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn post_message_with_max_sse_event_size(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        max_sse_event_size: usize,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.authorized(auth_header, &custom_headers, |token| {
            self.http.post_message_with_max_sse_event_size(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }

    async fn post_message_with_response_limits(
        &self,
        uri: Arc<str>,
        message: ClientJsonRpcMessage,
        session_id: Option<Arc<str>>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
        limits: StreamableHttpResponseLimits,
    ) -> Result<StreamableHttpPostResponse, HttpError> {
        self.authorized(auth_header, &custom_headers, |token| {
            self.http.post_message_with_response_limits(
                uri.clone(),
                message.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
                limits,
            )
        })
        .await
    }

    async fn delete_session(
        &self,
        uri: Arc<str>,
        session_id: Arc<str>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<(), HttpError> {
        self.authorized(auth_header, &custom_headers, |token| {
            self.http.delete_session(
                uri.clone(),
                session_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
        .await
    }

    async fn get_stream(
        &self,
        uri: Arc<str>,
        session_id: Option<Arc<str>>,
        last_event_id: Option<String>,
        auth_header: Option<String>,
        custom_headers: HashMap<HeaderName, HeaderValue>,
    ) -> Result<
        futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        HttpError,
    > {
        self.authorized(auth_header, &custom_headers, |token| {
            self.http.get_stream(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
            )
        })
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
    ) -> Result<
        futures_util::stream::BoxStream<'static, Result<sse_stream::Sse, sse_stream::Error>>,
        HttpError,
    > {
        self.authorized(auth_header, &custom_headers, |token| {
            self.http.get_stream_with_max_sse_event_size(
                uri.clone(),
                session_id.clone(),
                last_event_id.clone(),
                token,
                custom_headers.clone(),
                max_sse_event_size,
            )
        })
        .await
    }
}
