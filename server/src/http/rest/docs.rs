//! `GET /openapi.json` and `GET /docs`: the API described from its own types.
//!
//! The request and response schemas are generated (schemars) from the very
//! structs in `app::models` that the handlers serialise, so the document
//! cannot drift from the wire. The route table below adds what types cannot
//! say: method, path, summary, statuses and a runnable example. `/docs`
//! renders the same table as HTML (readable without JavaScript) with a
//! small "Try it" form per route that sends the example to this server.

use crate::http::state::AppState;
use app::models::{
    AgentInfo, ApprovalDecision, ApprovalList, ConversationList, ConversationResponse,
    CreateConversation, DeliveryList, ErrorBody, Event, FullConversationList, Health, LinkView,
    SendMessage, ToolList, Viewer,
};
use app::pipeline::{PipelineState, PipelineView};
use axum::Json;
use axum::extract::State;
use axum::response::Html;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

/// One documented route.
struct Route {
    method: &'static str,
    path: &'static str,
    summary: &'static str,
    /// Component name of the request body, if any.
    request: Option<&'static str>,
    /// Component name of the 2xx response (None: not JSON).
    response: Option<&'static str>,
    status: u16,
    /// Error statuses it can answer.
    errors: &'static [u16],
    /// An example request body.
    example: Option<&'static str>,
}

const ROUTES: &[Route] = &[
    Route {
        method: "GET",
        path: "/health",
        summary: "Liveness; `llm` says why the model cannot be used, if it cannot.",
        request: None,
        response: Some("Health"),
        status: 200,
        errors: &[],
        example: None,
    },
    Route {
        method: "GET",
        path: "/agent",
        summary: "The agent's name, description and model (for the UI).",
        request: None,
        response: Some("AgentInfo"),
        status: 200,
        errors: &[],
        example: None,
    },
    Route {
        method: "GET",
        path: "/tools",
        summary: "Every tool (MCP and A2A) with `destructiveHint`, its effective rule list (the `approvals:` rules that can decide its calls, in order, then `annotation` or `unannotated`) and its server's health.",
        request: None,
        response: Some("ToolList"),
        status: 200,
        errors: &[],
        example: None,
    },
    Route {
        method: "GET",
        path: "/notifications",
        summary: "The notification outbox (POLICY.md §5): the newest deliveries (?status=pending|delivered|dead|skipped, ?limit=1..500, default 100) with target, event, attempts, next attempt and last error, and the count per status.",
        request: None,
        response: Some("DeliveryList"),
        status: 200,
        errors: &[400],
        example: None,
    },
    Route {
        method: "POST",
        path: "/notifications/{id}/retry",
        summary: "Admins: sends a dead letter again with a fresh retry window (audited as notification.retried). 409 when the row is not a dead letter.",
        request: None,
        response: None,
        status: 200,
        errors: &[403, 409],
        example: Some("{}"),
    },
    Route {
        method: "GET",
        path: "/links/{token}",
        summary: "What a notification's signed link opens: the approval, the link's action (approve, reject, open) and its state (valid, used, expired, decided). Changes nothing. 400 when the link was changed or is not one.",
        request: None,
        response: Some("LinkView"),
        status: 200,
        errors: &[400, 404],
        example: None,
    },
    Route {
        method: "POST",
        path: "/links/{token}",
        summary: "Decides through a signed link, as the caller (checked like POST /approvals/{uuid}: role, separation of duties, approvers, quorum, expiry); decided_via is link and the link is used up in the same transaction. Body {} for an approve or reject link, {\"approved\": bool} for an open link; optional \"reason\". 409 when used, decided or expired; 400 when changed.",
        request: None,
        response: Some("ConversationResponse"),
        status: 200,
        errors: &[400, 403, 409],
        example: Some("{}"),
    },
    Route {
        method: "POST",
        path: "/tools/{name}/accept",
        summary: "Admins: accepts the changed definition of a held tool (POLICY.md §4: its description, input schema or annotations differ from the pinned ones); audited as tool.accepted. Answers {\"tool\": …} as GET /tools lists it. 409 when nothing changed.",
        request: None,
        response: None,
        status: 200,
        errors: &[403, 404, 409],
        example: Some("{}"),
    },
    Route {
        method: "GET",
        path: "/pipeline",
        summary: "The orchestration tree from the config's `agent:` key (absent in simple mode); a conversation's run of it is its `pipeline_state`.",
        request: None,
        response: Some("PipelineView"),
        status: 200,
        errors: &[],
        example: None,
    },
    Route {
        method: "POST",
        path: "/conversations",
        summary: "Creates a conversation; with `message`, runs its first turn and returns the result.",
        request: Some("CreateConversation"),
        response: Some("ConversationResponse"),
        status: 201,
        errors: &[400, 413, 502, 503, 504],
        example: Some(r#"{"message": "list all resources"}"#),
    },
    Route {
        method: "GET",
        path: "/conversations",
        summary: "Conversations, newest first, with counts. Each is a list item (id, session_id, status, created_at, updated_at, message_count, last_message with its role and first 200 characters, title, pending_approval), never its history, so a page costs the same however long its conversations are. Query: `limit` (1–200), `cursor` (the previous page's `next_cursor`), `status` (active, waiting_approval, completed, failed, cancelled, all), `q` (text in a message), `view` (`summary`, the default, or `full` for whole conversations as a FullConversationList, same paging).",
        request: None,
        response: Some("ConversationList"),
        status: 200,
        errors: &[400],
        example: None,
    },
    Route {
        method: "GET",
        path: "/conversations/{id}",
        summary: "One conversation with its whole timeline and pending approval.",
        request: None,
        response: Some("ConversationResponse"),
        status: 200,
        errors: &[404],
        example: None,
    },
    Route {
        method: "POST",
        path: "/conversations/{id}/messages",
        summary: "Sends a message and runs the turn. 409 while an approval is pending (the body names it) or another request runs.",
        request: Some("SendMessage"),
        response: Some("ConversationResponse"),
        status: 200,
        errors: &[400, 404, 409, 413, 502, 503, 504],
        example: Some(r#"{"message": "add a resource named apples with value 3"}"#),
    },
    Route {
        method: "POST",
        path: "/approvals/{uuid}",
        summary: "Approves or rejects. Also accepted: {\"action\":\"approve\"|\"reject\"}, {\"answer\":\"yes\"|\"no\"}; optional \"reason\". 409 if already decided; 403 when the approval's rule names other approvers.",
        request: Some("ApprovalDecision"),
        response: Some("ConversationResponse"),
        status: 200,
        errors: &[400, 403, 404, 409],
        example: Some(r#"{"approved": true}"#),
    },
    Route {
        method: "GET",
        path: "/approvals",
        summary: "The approvals waiting for a decision, oldest first, a page at a time: `?limit=` (default 100, at most 500; 0 for the total alone) and `?cursor=` (the `next_cursor` of the page before); `total` counts every one waiting.",
        request: None,
        response: Some("ApprovalList"),
        status: 200,
        errors: &[400],
        example: None,
    },
    Route {
        method: "GET",
        path: "/.well-known/agent-card.json",
        summary: "The A2A agent card (also at `/.well-known/agent.json`): 1.0 `supportedInterfaces` plus the 0.3 top-level fields unless `a2a_card: v1`. See README, \"A2A\".",
        request: None,
        response: None,
        status: 200,
        errors: &[],
        example: None,
    },
    Route {
        method: "POST",
        path: "/a2a",
        summary: "A2A JSON-RPC 2.0 (1.0 `SendMessage`, `SendStreamingMessage`, `GetTask`, `ListTasks`, `CancelTask`, `SubscribeToTask`; 0.3 `message/send`, `message/stream`, `tasks/get`, `tasks/cancel`, `tasks/resubscribe`). Errors are JSON-RPC errors with HTTP 200.",
        request: None,
        response: None,
        status: 200,
        errors: &[],
        example: Some(
            r#"{"jsonrpc": "2.0", "id": 1, "method": "SendMessage", "params": {"message": {"messageId": "m1", "role": "ROLE_USER", "parts": [{"text": "list all resources"}]}}}"#,
        ),
    },
    Route {
        method: "GET",
        path: "/events",
        summary: "Server-sent events for every conversation (`text/event-stream`; the data is an `Event`). Send `Last-Event-ID` to catch up after a drop; `resync` means reload.",
        request: None,
        response: None,
        status: 200,
        errors: &[],
        example: None,
    },
    Route {
        method: "GET",
        path: "/conversations/{id}/events",
        summary: "Server-sent events of one conversation.",
        request: None,
        response: None,
        status: 200,
        errors: &[404],
        example: None,
    },
    Route {
        method: "GET",
        path: "/auth/me",
        summary: "Who the caller is: auth mode, name, roles, whether they may decide approvals (open: it answers `signed_in: false` for nobody).",
        request: None,
        response: Some("Viewer"),
        status: 200,
        errors: &[401],
        example: None,
    },
    Route {
        method: "GET",
        path: "/audit",
        summary: "The hash-chained audit trail (admin; open in auth mode none), oldest first, streamed: `?after=SEQ&limit=N&format=jsonl|csv`. Rows: seq, at, actor, event, conversation_id, approval_uuid, details, prev_hash, hash. Check it with `agent audit verify`.",
        request: None,
        response: None,
        status: 200,
        errors: &[400, 401, 403],
        example: None,
    },
    Route {
        method: "POST",
        path: "/ui/sign-in",
        summary: "Auth mode tokens: `{\"token\", \"next\"?}` becomes the `stopgo_session` cookie (HttpOnly, SameSite=Lax); answers `{\"next\"}`. 401 for a wrong token, 429 after ten failures a minute from one address. The sign-in page posts the same as a form (urlencoded `token`, `next`, `form_token`): 303 to `next`, or back to the page saying why.",
        request: None,
        response: None,
        status: 200,
        errors: &[400, 401, 403, 429],
        example: None,
    },
    Route {
        method: "POST",
        path: "/ui/sign-out",
        summary: "Ends the browser session at once (the server-side row is deleted) and clears the cookie. Needs this browser's `form_token` (from `GET /auth/me`), as a form field or `{\"form_token\"}`: 403 without it.",
        request: None,
        response: None,
        status: 200,
        errors: &[403],
        example: None,
    },
    Route {
        method: "POST",
        path: "/ui/approvals/{uuid}/decide",
        summary: "The approval card's form (urlencoded, for pages without JavaScript): `decision` approve|reject, `reason`, `back`, `form_token`, and with `edit=1` the edited arguments as `arg.<name>`. Decides like `POST /approvals/{uuid}` (`decided_via: ui`), then 303 to `back`, or to `/ui/refused` saying why it was refused. 403 without this browser's form token or from a foreign Origin.",
        request: None,
        response: None,
        status: 303,
        errors: &[403, 415],
        example: None,
    },
    Route {
        method: "POST",
        path: "/ui/link/{token}",
        summary: "A notification link page's form (urlencoded): `decision` approve|reject (an Open link), `reason`, `form_token`. Decides like `POST /links/{token}`, then 303 to the link page with `?done=`, or to `/ui/refused`.",
        request: None,
        response: None,
        status: 303,
        errors: &[403, 415],
        example: None,
    },
    Route {
        method: "POST",
        path: "/ui/notifications/{id}/retry",
        summary: "The outbox page's Retry form (admin; urlencoded `form_token`): like `POST /notifications/{id}/retry`, then 303 back to `/ui/notifications`.",
        request: None,
        response: None,
        status: 303,
        errors: &[403, 415],
        example: None,
    },
    Route {
        method: "GET",
        path: "/openapi.json",
        summary: "This document.",
        request: None,
        response: None,
        status: 200,
        errors: &[],
        example: None,
    },
];

/// The component schemas, generated from the shared models.
fn components() -> Map<String, Value> {
    let mut generator = SchemaSettings::draft2020_12()
        .with(|s| s.definitions_path = "/components/schemas".into())
        .into_generator();
    let mut named = Map::new();
    macro_rules! add {
        ($($t:ty),* $(,)?) => {
            $(
                let schema = generator.root_schema_for::<$t>();
                let mut v = schema.to_value();
                if let Value::Object(m) = &mut v {
                    m.remove("$schema");
                    m.remove("$defs");
                }
                named.insert(stringify!($t).to_string(), v);
            )*
        };
    }
    add!(
        Health,
        AgentInfo,
        ToolList,
        DeliveryList,
        LinkView,
        CreateConversation,
        ConversationResponse,
        ConversationList,
        FullConversationList,
        SendMessage,
        ApprovalDecision,
        ApprovalList,
        ErrorBody,
        Event,
        PipelineView,
        PipelineState,
        Viewer,
    );
    let mut all = Map::new();
    for (k, v) in generator.take_definitions(true) {
        all.insert(k, v);
    }
    all.extend(named);
    all
}

/// The OpenAPI 3.1 document of the REST API.
pub fn openapi(state: &AppState) -> Value {
    let mut paths = Map::new();
    for r in ROUTES {
        let mut op = Map::new();
        op.insert("summary".into(), json!(r.summary));
        let params: Vec<Value> = r
            .path
            .split('/')
            .filter_map(|seg| seg.strip_prefix('{')?.strip_suffix('}'))
            .map(|name| json!({"name": name, "in": "path", "required": true, "schema": {"type": "string"}}))
            .collect();
        if !params.is_empty() {
            op.insert("parameters".into(), Value::Array(params));
        }
        if let Some(req) = r.request {
            let mut media = json!({"schema": {"$ref": format!("#/components/schemas/{req}")}});
            if let Some(ex) = r
                .example
                .and_then(|e| serde_json::from_str::<Value>(e).ok())
            {
                media["example"] = ex;
            }
            op.insert(
                "requestBody".into(),
                json!({"required": true, "content": {"application/json": media}}),
            );
        }
        let mut responses = Map::new();
        let ok = match r.response {
            Some(name) => {
                json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}})
            }
            None if r.path.ends_with("events") => {
                json!({"description": "An SSE stream of `Event`s", "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/Event"}}}})
            }
            None => json!({"description": "OK"}),
        };
        responses.insert(r.status.to_string(), ok);
        for e in r.errors {
            responses.insert(
                e.to_string(),
                json!({"description": error_meaning(*e), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}),
            );
        }
        op.insert("responses".into(), Value::Object(responses));
        let entry = paths.entry(r.path.to_string()).or_insert_with(|| json!({}));
        entry[r.method.to_ascii_lowercase()] = Value::Object(op);
    }
    json!({
        "openapi": "3.1.0",
        "info": {
            "title": format!("{} (Stop & Go agent)", state.config.name),
            "version": env!("CARGO_PKG_VERSION"),
            "description": "Conversations with an agent that stops before destructive actions until a human approves. Every error is {\"error\": \"...\"} with an honest status. Send X-Session-ID to correlate logs."
        },
        "paths": paths,
        "components": {
            "schemas": components(),
            "securitySchemes": {
                "bearer": {"type": "http", "scheme": "bearer", "description": "auth mode tokens: an operator token; oidc: a JWT from the issuer"},
                "session": {"type": "apiKey", "in": "cookie", "name": "stopgo_session", "description": "the browser session after /ui/sign-in"}
            }
        },
        "security": if state.auth.enforced() { json!([{"bearer": []}, {"session": []}]) } else { json!([]) }
    })
}

fn error_meaning(status: u16) -> &'static str {
    match status {
        400 => "The request is malformed (the error says which field and how to fix it)",
        404 => "Not found",
        409 => "Conflict: waiting for approval, already decided, or busy",
        401 => "No credentials, or credentials that are not valid (auth on): see WWW-Authenticate",
        403 => "The credentials lack the role this needs, or a cross-site request was refused",
        413 => "The body is larger than max_body_bytes",
        415 => "A state-changing request must send Content-Type: application/json",
        429 => "Too many failed sign-ins from this address: see Retry-After",
        502 => "The model provider failed",
        503 => "The model cannot be used (e.g. a missing API key)",
        504 => "The model provider timed out",
        _ => "Error",
    }
}

/// `GET /openapi.json`.
pub async fn openapi_json(State(state): State<AppState>) -> Json<Value> {
    Json(openapi(&state))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// `GET /docs`: the route table as a page, with "Try it" forms.
pub async fn page(State(state): State<AppState>) -> Html<String> {
    let mut rows = String::new();
    for (i, r) in ROUTES.iter().enumerate() {
        let body = r.example.unwrap_or("");
        let curl = match r.example {
            Some(ex) => format!(
                "curl -s -X {} http://HOST{} -H 'content-type: application/json' -d '{}'",
                r.method, r.path, ex
            ),
            None => format!(
                "curl -s{} http://HOST{}",
                if r.path.ends_with("events") { "N" } else { "" },
                r.path
            ),
        };
        let statuses = std::iter::once(r.status)
            .chain(r.errors.iter().copied())
            .map(|s| s.to_string())
            .collect::<Vec<_>>()
            .join(", ");
        let types = [
            r.request
                .map(|t| format!("request: <a href=\"#schema-{t}\">{t}</a>")),
            r.response
                .map(|t| format!("response: <a href=\"#schema-{t}\">{t}</a>")),
        ]
        .into_iter()
        .flatten()
        .collect::<Vec<_>>()
        .join(" · ");
        let try_it = if r.path.ends_with("events") {
            String::new()
        } else {
            format!(
                r#"<details class="try"><summary>Try it</summary>
<form data-method="{m}" data-path="{p}">
<label>Path <input name="path" value="{p}" aria-label="Path for {m} {p}"></label>
{bodyfield}
<button type="submit">Send</button>
<pre class="out" aria-live="polite"></pre>
</form></details>"#,
                m = r.method,
                p = escape(r.path),
                bodyfield = if r.method == "POST" {
                    format!(
                        r#"<label>Body <textarea name="body" rows="3" aria-label="Body for {} {}">{}</textarea></label>"#,
                        r.method,
                        escape(r.path),
                        escape(body)
                    )
                } else {
                    String::new()
                }
            )
        };
        rows.push_str(&format!(
            r#"<section class="route" id="route-{i}">
<h2><span class="method method-{ml}">{m}</span> <code>{p}</code></h2>
<p>{summary}</p>
<p class="meta">{types}{sep}statuses: {statuses}</p>
<pre><code>{curl}</code></pre>
{try_it}
</section>"#,
            ml = r.method.to_ascii_lowercase(),
            m = r.method,
            p = escape(r.path),
            summary = escape(r.summary),
            sep = if types.is_empty() { "" } else { " · " },
            curl = escape(&curl),
        ));
    }
    let mut schemas = String::new();
    for (name, schema) in components() {
        schemas.push_str(&format!(
            r#"<details id="schema-{n}"><summary><code>{n}</code></summary><pre>{s}</pre></details>"#,
            n = escape(&name),
            s = escape(&serde_json::to_string_pretty(&schema).unwrap_or_default())
        ));
    }
    Html(format!(
        r#"<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>API · {name}</title><link rel="icon" href="data:,">
<style>
body{{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:0 auto;padding:1rem;color:#1d2430}}
code,pre{{font-family:ui-monospace,monospace;font-size:13px}} pre{{background:#f3f5f8;padding:.6rem;overflow:auto;border-radius:6px}}
.route{{border-top:1px solid #dde2ea;padding:.5rem 0}} .method{{display:inline-block;min-width:3.5rem;font-size:12px;padding:2px 6px;border-radius:4px;color:#fff;background:#2f6fdb}}
.method-post{{background:#1f8a4c}} .meta{{color:#5b6675;font-size:13px}} textarea,input{{width:100%;font-family:ui-monospace,monospace}}
label{{display:block;margin:.3rem 0}} button{{padding:.3rem .9rem}}
</style></head><body>
<p><a href="/">← Web UI</a> · <a href="/openapi.json">openapi.json</a></p>
<h1>{name}: REST API</h1>
<p>Every error is <code>{{"error": "..."}}</code> with an honest status. <code>HOST</code> in the examples is this server.</p>
{rows}
<h2>Schemas</h2>
<p>Generated from the types the server serialises.</p>
{schemas}
<script src="/docs.js" defer></script>
</body></html>"#,
        name = escape(&state.config.name),
    ))
}

/// `GET /docs.js`: the "Try it" forms of `/docs`. A file of its own, not an
/// inline script, so the page works under the HTML CSP (`script-src 'self'`).
pub async fn script() -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/javascript; charset=utf-8",
        )],
        include_str!("docs.js"),
    )
}
