//! The HTML form endpoints under `/ui/` (REACH.md §1): every decision
//! control of the pages works as a plain form post, before the page's
//! WebAssembly has loaded or with JavaScript off.
//!
//! - `POST /ui/approvals/:uuid/decide`: Approve or Reject (with the
//!   optional reason), or Approve with edited arguments (`edit=1` and the
//!   `arg.<name>` fields of "Edit arguments", read as the browser reads
//!   them: `app::edit_args`);
//! - `POST /ui/questions/:uuid/answer`: a question card's form (QUESTIONS.md);
//! - `POST /ui/link/:token`: a notification link's button;
//! - `POST /ui/notifications/:id/retry`: an admin sends a dead letter again;
//! - `POST /ui/approvals/:uuid/resolve`: what someone found of a call left
//!   in doubt (RECEIPTS.md §3): `outcome` and an optional `note`;
//! - `GET /ui/refused`: what a refused post comes back to.
//!
//! Each decides through the same engine command as the JSON API (same
//! roles, separation of duties, quorum, rules and audit; `decided_via`
//! `ui`, or `link`), after [`UiForm`] has checked the form's token
//! (`auth::forms`): a post without this browser's token is 403 and decides
//! nothing. It then answers `303 See Other`: back to the page the form came
//! from, or, when the decision was refused (already decided, not allowed,
//! expired, arguments that do not fit), to `/ui/refused`, which says why
//! and links back. The reason travels in a short-lived `HttpOnly` cookie
//! scoped to that page, never in the URL, so nobody can make the page say
//! something of their choosing.

use crate::engine::DecisionRequest;
use crate::http::auth::target::local_target;
use crate::http::caller::Caller;
use crate::http::error::ApiError;
use crate::http::html::{escape, html_page};
use crate::http::state::AppState;
use axum::extract::{FromRequest, Path, Query, Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// The cookie that carries a refusal to `/ui/refused`.
const NOTICE_COOKIE: &str = "stopgo_notice";
/// The most of a refusal's text the cookie carries.
const NOTICE_MAX: usize = 1000;

/// A form's fields, in the order posted.
pub(crate) struct Fields(Vec<(String, String)>);

impl Fields {
    /// The first value posted for `name`.
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .find(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
    }

    /// Every value posted for `name`, in order.
    pub(crate) fn all(&self, name: &str) -> Vec<&str> {
        self.0
            .iter()
            .filter(|(k, _)| k == name)
            .map(|(_, v)| v.as_str())
            .collect()
    }

    /// `name`'s value, trimmed, if it is not empty.
    fn text(&self, name: &str) -> Option<String> {
        self.get(name)
            .map(str::trim)
            .filter(|s| !s.is_empty())
            .map(str::to_string)
    }
}

/// An `application/x-www-form-urlencoded` body whose form token is this
/// browser's (`auth::forms`): the only way a `/ui/` form handler reads its
/// body, so no form endpoint can forget the check.
pub(crate) struct UiForm(pub Fields);

impl<S: Send + Sync> FromRequest<S> for UiForm {
    type Rejection = ApiError;

    async fn from_request(req: Request, state: &S) -> Result<Self, ApiError> {
        let urlencoded = req
            .headers()
            .get(header::CONTENT_TYPE)
            .and_then(|v| v.to_str().ok())
            .is_some_and(|v| {
                v.split(';').next().is_some_and(|e| {
                    e.trim()
                        .eq_ignore_ascii_case("application/x-www-form-urlencoded")
                })
            });
        let (parts, body) = req.into_parts();
        let bytes =
            axum::body::Bytes::from_request(Request::from_parts(parts.clone(), body), state)
                .await
                .map_err(|e| {
                    ApiError::BadRequest(format!("could not read the form: {}", e.body_text()))
                })?;
        // An empty post is an empty form (its missing token is refused
        // below); a body must be a form.
        if !bytes.is_empty() && !urlencoded {
            return Err(ApiError::UnsupportedMediaType(
                "this is a page's form: post it as application/x-www-form-urlencoded (the JSON API is under /approvals, /links, /notifications)"
                    .into(),
            ));
        }
        let fields: Vec<(String, String)> = serde_urlencoded::from_bytes(&bytes)
            .map_err(|e| ApiError::BadRequest(format!("could not read the form: {e}")))?;
        let fields = Fields(fields);
        if !crate::http::auth::form_token::check(
            &parts.headers,
            &parts.extensions,
            fields.get(crate::http::auth::form_token::FIELD),
        ) {
            tracing::info!(path = %parts.uri.path(), "refused a form post without this browser's form token");
            return Err(ApiError::Forbidden(
                "this form's token is missing or is not this browser's: reload the page and try again"
                    .into(),
            ));
        }
        Ok(UiForm(fields))
    }
}

/// `303 See Other` to `to`.
fn see_other(to: &str) -> Response {
    let mut r = StatusCode::SEE_OTHER.into_response();
    if let Ok(v) = HeaderValue::from_str(to) {
        r.headers_mut().insert(header::LOCATION, v);
    }
    r
}

/// 303 to the page that says why `e` refused the post, then links `back`.
fn refused(e: ApiError, back: &str) -> Response {
    let why = if e.is_internal() {
        let id = crate::http::error::log_internal(&e);
        crate::http::error::internal_message(&id)
    } else {
        e.to_string()
    };
    let why: String = why.chars().take(NOTICE_MAX).collect();
    let mut r = see_other(&format!(
        "/ui/refused?back={}",
        crate::http::auth::target::encode(back)
    ));
    let value = format!(
        "{NOTICE_COOKIE}={}; HttpOnly; SameSite=Strict; Path=/ui/refused; Max-Age=300",
        url_encode(&why)
    );
    if let Ok(v) = HeaderValue::from_str(&value) {
        r.headers_mut().append(header::SET_COOKIE, v);
    }
    r
}

/// Percent-encodes everything but unreserved characters (a cookie value).
fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'.' | b'_' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The inverse of [`url_encode`] (bad escapes are kept as they are).
fn url_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%'
            && i + 2 < b.len()
            && let Some(v) = std::str::from_utf8(&b[i + 1..i + 3])
                .ok()
                .and_then(|h| u8::from_str_radix(h, 16).ok())
        {
            out.push(v);
            i += 3;
            continue;
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Where a form comes back to: its `back` field when it is a path of this
/// site, else `default`.
fn back_of(f: &Fields, default: &str) -> String {
    match f.get("back") {
        Some(b) if !b.is_empty() => local_target(Some(b)),
        _ => default.to_string(),
    }
}

/// `POST /ui/approvals/:uuid/decide`: `decision` (`approve` | `reject`),
/// `reason`, `back`, and with `edit=1` the edited arguments.
pub(crate) async fn decide(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Caller(mut ctx): Caller,
    UiForm(f): UiForm,
) -> Response {
    ctx.via = crate::domain::channel::Channel::Ui;
    let back = back_of(&f, "/ui/approvals");
    let approve = match f.get("decision") {
        Some("approve") => true,
        Some("reject") => false,
        _ => {
            return refused(
                ApiError::BadRequest("the form said neither approve nor reject".into()),
                &back,
            );
        }
    };
    let arguments = if f.get("edit") == Some("1") {
        if !approve {
            return refused(
                ApiError::BadRequest("edited arguments only go with an approval".into()),
                &back,
            );
        }
        match edited_arguments(&state, &uuid, &f).await {
            Ok(a) => Some(a),
            Err(e) => return refused(e, &back),
        }
    } else {
        None
    };
    let grant = if f.get("grant") == Some("1") {
        if !approve {
            return refused(
                ApiError::BadRequest("a grant only goes with an approval".into()),
                &back,
            );
        }
        match grant_of(&f) {
            Ok(g) => Some(g),
            Err(e) => return refused(e, &back),
        }
    } else {
        None
    };
    let decision = DecisionRequest {
        approve,
        reason: f.text("reason"),
        arguments,
        grant,
        upstream_receipt: None,
    };
    match state.engine.decide(&uuid, decision, ctx).await {
        Ok(_) => see_other(&back),
        Err(e) => refused(e.into(), &back),
    }
}

/// The grant an "Approve and allow again…" form asks for: `grant_scope`,
/// `grant_for`, and one `grant_match` per argument that must repeat
/// (`grant_offered`: how many the form offered; all of them checked means
/// every argument, none is refused by the engine as an empty match).
fn grant_of(f: &Fields) -> Result<app::models::GrantRequest, ApiError> {
    let picked: Vec<String> = f
        .all("grant_match")
        .into_iter()
        .map(str::to_string)
        .collect();
    let offered: usize = f
        .get("grant_offered")
        .and_then(|n| n.parse().ok())
        .unwrap_or(usize::MAX);
    if picked.is_empty() && offered > 0 {
        return Err(ApiError::BadRequest(
            "check at least one argument that later calls must repeat (all of them: every argument must repeat)"
                .into(),
        ));
    }
    Ok(app::models::GrantRequest {
        scope: f.text("grant_scope"),
        duration: f.text("grant_for"),
        match_pointers: (picked.len() != offered).then_some(picked),
    })
}

/// The arguments an "Edit arguments" form posted, read against the tool's
/// schema as the browser reads them (a sub-agent's tool: by the types of
/// the arguments asked).
async fn edited_arguments(
    state: &AppState,
    uuid: &str,
    f: &Fields,
) -> Result<serde_json::Value, ApiError> {
    let a = state
        .store
        .approval(uuid)
        .await?
        .ok_or_else(|| ApiError::NotFound(format!("approval {uuid} does not exist")))?
        .approval;
    let schema = if a.remote_task_id.is_some() {
        None
    } else {
        crate::http::rest::tools::tool_list(state)
            .tools
            .into_iter()
            .find(|t| t.name == a.tool_name)
            .map(|t| t.input_schema)
    };
    let specs = app::edit_args::specs(schema.as_ref(), &a.tool_args);
    app::edit_args::from_form(&specs, |k| f.get(k))
        .map_err(|e| ApiError::BadRequest(format!("the edited arguments do not fit: {e}")))
}

/// `POST /ui/questions/:uuid/answer`: a question card's form: `action`
/// (`accept` | `decline` | `cancel`), `back`, and for a form question its
/// fields as `field.<name>` (read by the question's schema). Answers like
/// `POST /questions/:uuid` (`answered_via: ui`).
pub(crate) async fn answer(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Caller(mut ctx): Caller,
    UiForm(f): UiForm,
) -> Response {
    ctx.via = crate::domain::channel::Channel::Ui;
    let back = back_of(&f, "/ui/approvals");
    let Some(action) = f.text("action") else {
        return refused(
            ApiError::BadRequest("the form said neither accept, decline nor cancel".into()),
            &back,
        );
    };
    let content = if action == "accept" {
        let q = match state.store.question(&uuid).await {
            Ok(Some(q)) => q.question,
            Ok(None) => {
                return refused(
                    ApiError::NotFound(format!("question {uuid:?} not found")),
                    &back,
                );
            }
            Err(e) => return refused(e.into(), &back),
        };
        match (q.kind, &q.schema) {
            (app::models::QuestionKind::Form, Some(schema)) => {
                match crate::domain::form::from_fields(schema, |k| f.all(k)) {
                    Ok(c) => Some(c),
                    Err(e) => return refused(ApiError::BadRequest(e), &back),
                }
            }
            _ => None,
        }
    } else {
        None
    };
    let answer = crate::engine::Answer { action, content };
    match state.engine.answer(&uuid, answer, ctx).await {
        Ok(_) => see_other(&back),
        Err(e) => refused(e.into(), &back),
    }
}

/// `POST /ui/link/:token`: a notification link's button (`decision` says
/// which for an Open link), with the optional `reason`; back to the link
/// page with `?done=approved|rejected`.
pub(crate) async fn link(
    State(state): State<AppState>,
    Path(token): Path<String>,
    Caller(ctx): Caller,
    UiForm(f): UiForm,
) -> Response {
    let page = format!("/ui/link/{}", crate::http::auth::target::encode(&token));
    let c = match crate::http::rest::links::claims(&state, &token) {
        Ok(c) => c,
        Err(e) => return refused(e, &page),
    };
    let approved = match f.get("decision") {
        Some("approve") => Some(serde_json::Value::Bool(true)),
        Some("reject") => Some(serde_json::Value::Bool(false)),
        _ => None,
    };
    use crate::notify::links::Action;
    let approves = match c.action {
        Action::Approve => true,
        Action::Reject => false,
        Action::Open => approved == Some(serde_json::Value::Bool(true)),
    };
    match crate::http::rest::links::use_link(&state, &c, approved.as_ref(), f.text("reason"), ctx)
        .await
    {
        Ok(_) => see_other(&format!(
            "{page}?done={}",
            if approves { "approved" } else { "rejected" }
        )),
        Err(e) => refused(e, &page),
    }
}

/// `POST /ui/approvals/:uuid/resolve` (approver): an in-doubt call ran,
/// did not, or is sent again; back to the conversation.
pub(crate) async fn resolve(
    State(state): State<AppState>,
    Path(uuid): Path<String>,
    Caller(mut ctx): Caller,
    UiForm(f): UiForm,
) -> Response {
    ctx.via = crate::domain::channel::Channel::Ui;
    let back = back_of(&f, "/ui/approvals");
    let Some(outcome) = f
        .get("outcome")
        .and_then(crate::store::resolutions::Outcome::parse)
    else {
        return refused(
            ApiError::BadRequest("the form said neither executed, failed nor retry".into()),
            &back,
        );
    };
    let note = f.text("note").filter(|n| n.chars().count() <= 1000);
    match state.engine.resolve(&uuid, outcome, note, &ctx).await {
        Ok(_) => see_other(&back),
        Err(e) => refused(e.into(), &back),
    }
}

/// `POST /ui/notifications/:id/retry` (admin): back to the outbox.
pub(crate) async fn retry(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Caller(ctx): Caller,
    UiForm(_): UiForm,
) -> Response {
    let back = "/ui/notifications";
    match state
        .store
        .retry_notification(&id, &ctx.principal.name)
        .await
    {
        Ok(true) => see_other(back),
        Ok(false) => refused(
            ApiError::Conflict(format!(
                "notification {id:?} is not a dead letter: only dead letters are sent again"
            )),
            back,
        ),
        Err(e) => refused(e.into(), back),
    }
}

/// `POST /ui/grants/:id/revoke` (its granter or an admin): back to the
/// tools page.
pub(crate) async fn revoke_grant(
    State(state): State<AppState>,
    Path(id): Path<String>,
    Caller(mut ctx): Caller,
    UiForm(_): UiForm,
) -> Response {
    ctx.via = crate::domain::channel::Channel::Ui;
    let back = "/ui/tools";
    match state.engine.revoke_grant(&id, &ctx).await {
        Ok(_) => see_other(back),
        Err(e) => refused(e.into(), back),
    }
}

#[derive(Deserialize)]
pub(crate) struct RefusedQuery {
    back: Option<String>,
}

/// `GET /ui/refused?back=`: why the last form post was refused (from its
/// cookie, then forgotten), and the way back.
pub(crate) async fn refused_page(
    State(state): State<AppState>,
    headers: HeaderMap,
    Query(q): Query<RefusedQuery>,
) -> Response {
    let back = local_target(q.back.as_deref());
    let why = crate::http::auth::session::read_cookie(&headers, NOTICE_COOKIE)
        .map(|c| url_decode(&c))
        .unwrap_or_else(|| "Nothing was changed by that form.".into());
    let body = format!(
        r#"<section class="panel" id="refused" role="alert"><p id="refused-reason">{}</p></section>
<p><a class="button primary" id="refused-back" href="{}">Back</a></p>"#,
        escape(&why),
        escape(&back)
    );
    let mut r = html_page(&state.leptos, "Not done", &body);
    r.headers_mut().append(
        header::SET_COOKIE,
        HeaderValue::from_static(
            "stopgo_notice=; HttpOnly; SameSite=Strict; Path=/ui/refused; Max-Age=0",
        ),
    );
    r.headers_mut()
        .insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_survives_its_cookie_round_trip() {
        let why = "approval 5 was already decided (status: approved); «ünïcode» & <tags>";
        assert_eq!(url_decode(&url_encode(why)), why);
        assert_eq!(url_decode("%ZZ%4"), "%ZZ%4");
    }
}
