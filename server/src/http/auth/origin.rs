//! Cross-site protection and security headers, in every mode (AUTH.md §4).
//!
//! A browser attaches the operator's cookies (and, in mode `none`, reaches
//! the agent at all) whatever page sends the request, so a state-changing
//! request is refused when it could have come from another site:
//! - a body that is not JSON (`415`): `text/plain`, forms and bodies with
//!   no type are what a foreign page can send without a CORS preflight
//!   (the pages' own forms under `/ui/` are the exception: each carries a
//!   token bound to the browser, checked by its handler, see `forms`);
//! - an `Origin` that is not the agent's own nor in `auth.allowed_origins`,
//!   or, with no `Origin`, `Sec-Fetch-Site: cross-site` (`403`).
//!
//! Requests with neither header (curl, SDKs, other agents) pass: they come
//! from no browser.
//!
//! An agent listening on loopback also refuses (`403`) any request whose
//! `Host` names another machine, whatever its method: that is DNS
//! rebinding, a foreign page whose name now resolves to 127.0.0.1 and
//! whose requests are same-origin to the browser (so the `Origin` check
//! above cannot see them). Loopback names, `public_url`'s host and the
//! hosts of `auth.allowed_origins` are accepted. Every response gets `X-Content-Type-Options: nosniff`;
//! HTML also a CSP with `frame-ancestors 'none'` and `X-Frame-Options: DENY`
//! so the Approve button cannot be framed and clickjacked. Pages rendered
//! by Leptos carry their own CSP with the per-response script nonce
//! ([`page_csp`]); other HTML gets [`STATIC_CSP`].

pub(crate) use crate::domain::net::parse_origin;
use crate::http::error::ApiError;
use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, Method, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use std::sync::Arc;

/// The origins a browser may send state-changing requests from.
#[derive(Clone, Debug, Default)]
pub(crate) struct Origins {
    /// From `public_url`, when set (else the request's `Host` is used).
    public: Option<String>,
    /// `auth.allowed_origins`.
    allowed: Vec<String>,
    /// Set when the agent listens on loopback only: the host names a
    /// request's `Host` may carry besides loopback ones (`public_url`'s
    /// and the allowed origins').
    loopback_names: Option<Vec<String>>,
}

impl Origins {
    pub(crate) fn new(public_url: Option<&str>, allowed: &[String]) -> Origins {
        Origins {
            public: public_url.and_then(parse_origin),
            allowed: allowed.iter().filter_map(|o| parse_origin(o)).collect(),
            loopback_names: None,
        }
    }

    /// The agent listens on loopback only: refuse a `Host` naming
    /// another machine (DNS rebinding).
    pub(crate) fn on_loopback(mut self) -> Origins {
        let names = self.public.iter().chain(&self.allowed);
        let names = names
            .filter_map(|o| o.split_once("://").map(|(_, h)| host_name(h)))
            .collect();
        self.loopback_names = Some(names);
        self
    }

    /// Why a request's `Host` is refused, if it is: a name that is not
    /// this machine's while the agent listens on loopback only.
    fn rebinding(&self, host: Option<&str>) -> Option<ApiError> {
        let names = self.loopback_names.as_ref()?;
        let name = host_name(host?);
        let local = crate::domain::net::is_loopback_host(&name) || name.ends_with(".localhost");
        if local || names.contains(&name) {
            return None;
        }
        Some(ApiError::Forbidden(format!(
            "the Host {name:?} is not this machine: this agent listens on loopback only (set public_url to the name it is reached by)"
        )))
    }

    /// Whether `origin` (an `Origin` header) is ours or allowed; `host` is
    /// the request's `Host`.
    fn accepts(&self, origin: &str, host: Option<&str>) -> bool {
        let Some(o) = parse_origin(origin) else {
            return false; // "null" (sandboxed frames, file: pages) and junk
        };
        if self.allowed.contains(&o) {
            return true;
        }
        match (&self.public, host) {
            (Some(p), _) => *p == o,
            (None, Some(h)) => ["http", "https"]
                .iter()
                .any(|s| parse_origin(&format!("{s}://{h}")).as_deref() == Some(o.as_str())),
            (None, None) => false,
        }
    }
}

/// The host name of a `Host` value (`name`, `name:port`, `[v6]:port`),
/// lower-cased, without the port.
fn host_name(h: &str) -> String {
    let h = h.trim().to_ascii_lowercase();
    match h.strip_prefix('[') {
        Some(v6) => v6.split(']').next().unwrap_or("").to_string(),
        None => h.split(':').next().unwrap_or("").to_string(),
    }
}

fn changes_state(m: &Method) -> bool {
    matches!(
        *m,
        Method::POST | Method::PUT | Method::PATCH | Method::DELETE
    )
}

fn has_body(h: &HeaderMap) -> bool {
    let len = h
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.trim().parse::<u64>().ok());
    match len {
        Some(n) => n > 0,
        None => h.contains_key(header::TRANSFER_ENCODING),
    }
}

/// `application/json`, or any `…/…+json`, with or without parameters.
pub(crate) fn is_json(h: &HeaderMap) -> bool {
    let Some(ct) = h.get(header::CONTENT_TYPE).and_then(|v| v.to_str().ok()) else {
        return false;
    };
    let essence = ct
        .split(';')
        .next()
        .unwrap_or("")
        .trim()
        .to_ascii_lowercase();
    essence == "application/json"
        || essence
            .split_once('/')
            .is_some_and(|(_, sub)| sub.ends_with("+json"))
}

/// `application/x-www-form-urlencoded`, what an HTML form posts.
fn is_form(h: &HeaderMap) -> bool {
    h.get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .and_then(|ct| ct.split(';').next())
        .is_some_and(|e| {
            e.trim()
                .eq_ignore_ascii_case("application/x-www-form-urlencoded")
        })
}

/// Why a request was refused as cross-site, if it was.
pub(crate) fn check(
    origins: &Origins,
    method: &Method,
    path: &str,
    h: &HeaderMap,
) -> Option<ApiError> {
    let host = h.get(header::HOST).and_then(|v| v.to_str().ok());
    if let Some(refused) = origins.rebinding(host) {
        return Some(refused);
    }
    if !changes_state(method) {
        return None;
    }
    // `/a2a` and its HTTP+JSON binding refuse non-JSON bodies themselves
    // (by [`is_json`]) with the A2A error the spec names (-32005,
    // ContentTypeNotSupported; 415 over HTTP+JSON), before anything runs.
    let a2a = path == "/a2a" || path.starts_with("/a2a/");
    // The pages' own forms (REACH.md §1) post urlencoded to `/ui/...`;
    // each of those handlers checks the form's token (`forms`) first.
    let page_form = path.starts_with("/ui/") && is_form(h);
    // Slack posts its clicks urlencoded (REACH.md §2); the request's
    // signature, checked by the handler over the raw body, is what a
    // foreign page cannot make.
    let slack = path == crate::http::paths::SLACK_INTERACTIONS && is_form(h);
    // A2A's gRPC binding: `application/grpc` is not a type a page can
    // send without a CORS preflight, and gRPC needs HTTP/2 besides.
    let grpc =
        path.starts_with(crate::http::paths::A2A_GRPC_PREFIX) && crate::http::paths::is_grpc(h);
    if has_body(h) && !is_json(h) && !a2a && !page_form && !slack && !grpc {
        return Some(ApiError::UnsupportedMediaType(
            "a request that changes state must send its body as Content-Type: application/json"
                .into(),
        ));
    }
    match h.get(header::ORIGIN).map(|v| v.to_str().unwrap_or("")) {
        Some(o) if !origins.accepts(o, host) => Some(ApiError::Forbidden(format!(
            "cross-site request refused: the Origin {o:?} is not this agent's origin nor listed in auth.allowed_origins"
        ))),
        Some(_) => None,
        None => {
            let site = h.get("sec-fetch-site").and_then(|v| v.to_str().ok());
            (site == Some("cross-site")).then(|| {
                ApiError::Forbidden(
                    "cross-site request refused (Sec-Fetch-Site: cross-site)".into(),
                )
            })
        }
    }
}

/// The CSP of HTML that is not a Leptos page (no inline scripts).
pub(crate) const STATIC_CSP: &str = "default-src 'self'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
     img-src 'self' data:; connect-src 'self'; object-src 'none'; base-uri 'self'; \
     form-action 'self'; frame-ancestors 'none'";

/// The CSP of a Leptos page: scripts from our origin, and inline scripts
/// only with this render's `nonce`, which leptos_axum puts on every
/// script it writes (the hydration bootstrap and each streamed chunk).
/// `'wasm-unsafe-eval'` lets the browser compile the app's WebAssembly.
/// An injected `<script>` has no nonce, so it does not run.
pub(crate) fn page_csp(nonce: &str) -> String {
    format!(
        "default-src 'self'; script-src 'self' 'nonce-{nonce}' 'wasm-unsafe-eval'; \
         style-src 'self' 'unsafe-inline'; img-src 'self' data:; connect-src 'self'; \
         object-src 'none'; base-uri 'self'; form-action 'self'; frame-ancestors 'none'"
    )
}

/// Middleware: refuses cross-site state changes; adds the security headers.
pub(crate) async fn layer(
    State(origins): State<Arc<Origins>>,
    req: Request,
    next: Next,
) -> Response {
    if let Some(e) = check(&origins, req.method(), req.uri().path(), req.headers()) {
        tracing::info!(method = %req.method(), path = %req.uri().path(), status = e.status().as_u16(), "refused a cross-site request");
        let mut resp = e.into_response();
        secure(resp.headers_mut());
        return resp;
    }
    let mut resp = next.run(req).await;
    secure(resp.headers_mut());
    resp
}

/// Adds the security headers a response needs.
fn secure(h: &mut HeaderMap) {
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    let html = h
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if html {
        if !h.contains_key(header::CONTENT_SECURITY_POLICY) {
            h.insert(
                header::CONTENT_SECURITY_POLICY,
                HeaderValue::from_static(STATIC_CSP),
            );
        }
        h.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
        h.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("same-origin"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn headers(pairs: &[(&str, &str)]) -> HeaderMap {
        let mut h = HeaderMap::new();
        for (k, v) in pairs {
            h.insert(
                axum::http::HeaderName::from_bytes(k.as_bytes()).unwrap(),
                HeaderValue::from_str(v).unwrap(),
            );
        }
        h
    }

    #[test]
    fn a_loopback_agent_refuses_a_foreign_host_on_every_method() {
        let o = Origins::new(
            Some("https://agent.example.com"),
            &["https://ops.example.com:8443".into()],
        )
        .on_loopback();
        for host in [
            "127.0.0.1:8080",
            "localhost:8080",
            "LOCALHOST",
            "[::1]:8080",
            "app.localhost:3000",
            "agent.example.com",
            "ops.example.com:9",
        ] {
            assert!(
                check(&o, &Method::GET, "/", &headers(&[("host", host)])).is_none(),
                "{host}"
            );
        }
        for host in ["evil.example.com", "evil.example.com:8080", "10.0.0.7:8080"] {
            let e = check(&o, &Method::GET, "/mcp", &headers(&[("host", host)])).unwrap();
            assert_eq!(e.status(), 403, "{host}");
        }
        // Not on loopback: any Host (a proxy in front names the agent).
        let open = Origins::new(None, &[]);
        assert!(
            check(
                &open,
                &Method::GET,
                "/",
                &headers(&[("host", "evil.example.com")])
            )
            .is_none()
        );
        // No Host at all (HTTP/2 carries :authority): nothing to check.
        assert!(check(&o, &Method::GET, "/", &headers(&[])).is_none());
    }

    #[test]
    fn origins_are_normalised() {
        assert_eq!(
            parse_origin("HTTP://Example.com:80").as_deref(),
            Some("http://example.com")
        );
        assert_eq!(
            parse_origin("https://a.b:8443/x").as_deref(),
            Some("https://a.b:8443")
        );
        assert_eq!(parse_origin("null"), None);
        assert_eq!(parse_origin("ftp://x"), None);
        assert_eq!(
            parse_origin("http://[::1]:8080").as_deref(),
            Some("http://[::1]:8080")
        );
    }

    #[test]
    fn state_changes_need_json_and_a_friendly_origin() {
        let o = Origins::new(None, &["https://ops.example.com".into()]);
        let post = Method::POST;
        let json = [
            ("host", "127.0.0.1:8080"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert!(
            check(&o, &post, "/x", &headers(&json)).is_none(),
            "curl-like JSON passes"
        );
        let plain = [
            ("host", "a:1"),
            ("content-type", "text/plain"),
            ("content-length", "2"),
        ];
        assert_eq!(
            check(&o, &post, "/x", &headers(&plain)).unwrap().status(),
            415
        );
        let none = [("host", "a:1"), ("content-length", "2")];
        assert_eq!(
            check(&o, &post, "/x", &headers(&none)).unwrap().status(),
            415
        );
        let empty = [("host", "a:1"), ("content-length", "0")];
        assert!(
            check(&o, &post, "/x", &headers(&empty)).is_none(),
            "no body, no type needed"
        );
        let vnd = [
            ("host", "a:1"),
            ("content-type", "application/vnd.x+json; charset=utf-8"),
            ("content-length", "2"),
        ];
        assert!(check(&o, &post, "/x", &headers(&vnd)).is_none());
        let evil = [
            ("host", "127.0.0.1:8080"),
            ("origin", "http://evil.example"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert_eq!(
            check(&o, &post, "/x", &headers(&evil)).unwrap().status(),
            403
        );
        let own = [
            ("host", "127.0.0.1:8080"),
            ("origin", "http://127.0.0.1:8080"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert!(check(&o, &post, "/x", &headers(&own)).is_none());
        let allowed = [
            ("host", "127.0.0.1:8080"),
            ("origin", "https://ops.example.com"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert!(check(&o, &post, "/x", &headers(&allowed)).is_none());
        let null = [
            ("host", "127.0.0.1:8080"),
            ("origin", "null"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert_eq!(
            check(&o, &post, "/x", &headers(&null)).unwrap().status(),
            403
        );
        let fetch_site = [
            ("host", "a:1"),
            ("sec-fetch-site", "cross-site"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert_eq!(
            check(&o, &post, "/x", &headers(&fetch_site))
                .unwrap()
                .status(),
            403
        );
        assert!(
            check(&o, &Method::GET, "/x", &headers(&evil)).is_none(),
            "reads are not state changes"
        );
        let pinned = Origins::new(Some("https://agent.example.com/base"), &[]);
        let behind = [
            ("host", "10.0.0.5:8080"),
            ("origin", "https://agent.example.com"),
            ("content-type", "application/json"),
            ("content-length", "2"),
        ];
        assert!(check(&pinned, &post, "/x", &headers(&behind)).is_none());
    }
}
