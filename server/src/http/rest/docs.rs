//! `GET /openapi.json` and `GET /docs`: the API described from its own types.
//!
//! The request and response schemas are generated (schemars) from the very
//! structs in `app::models` that the handlers serialise, so the document
//! cannot drift from the wire. The one route list (`http::routes`, passed
//! in by the routes that serve these, so this file does not import it) adds
//! what types cannot say: method, path, summary, statuses and a runnable
//! example; the router is made from the same list. `/docs`
//! renders the same table as HTML (readable without JavaScript) with a
//! small "Try it" form per route that sends the example to this server.

use crate::http::route::Route;
use crate::http::state::AppState;
use app::models::{
    AgentInfo, AnswerQuestion, ApprovalDecision, ApprovalList, ApprovalRecord, ConversationList,
    ConversationResponse, CreateConversation, DeliveryList, ErrorBody, Event, FullConversationList,
    GrantList, Health, LinkView, Question, QuestionPage, ResolveInDoubt, SendMessage, ToolList,
    Viewer,
};
use app::pipeline::{PipelineState, PipelineView};
use axum::Json;
use axum::extract::State;
use axum::response::Html;
use schemars::generate::SchemaSettings;
use serde_json::{Map, Value, json};

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
        GrantList,
        LinkView,
        CreateConversation,
        ConversationResponse,
        ConversationList,
        FullConversationList,
        SendMessage,
        ApprovalDecision,
        ApprovalList,
        ApprovalRecord,
        ResolveInDoubt,
        AnswerQuestion,
        Question,
        QuestionPage,
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
pub(crate) fn openapi(state: &AppState, routes: &[Route]) -> Value {
    let mut paths = Map::new();
    for route in routes {
        let (r, method, path) = (&route.doc, route.method, route.path);
        let mut op = Map::new();
        op.insert("summary".into(), json!(r.summary));
        let params: Vec<Value> = path
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
        let ok = match (r.response, r.media) {
            (Some(name), _) => {
                json!({"description": "OK", "content": {"application/json": {"schema": {"$ref": format!("#/components/schemas/{name}")}}}})
            }
            (None, Some(media)) => json!({"description": "OK", "content": {media: {}}}),
            (None, None) if path.ends_with("events") => {
                json!({"description": "An SSE stream of `Event`s", "content": {"text/event-stream": {"schema": {"$ref": "#/components/schemas/Event"}}}})
            }
            (None, None) => json!({"description": "OK"}),
        };
        responses.insert(r.status.to_string(), ok);
        for e in r.errors {
            responses.insert(
                e.to_string(),
                json!({"description": error_meaning(*e), "content": {"application/json": {"schema": {"$ref": "#/components/schemas/ErrorBody"}}}}),
            );
        }
        op.insert("responses".into(), Value::Object(responses));
        let entry = paths.entry(path.to_string()).or_insert_with(|| json!({}));
        entry[method.to_ascii_lowercase()] = Value::Object(op);
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
pub(crate) async fn openapi_json(
    State(state): State<AppState>,
    routes: &'static [Route],
) -> Json<Value> {
    Json(openapi(&state, routes))
}

fn escape(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// One route's section of `/docs`: method, path, summary, types,
/// statuses, a curl line and (but for event streams) a "Try it" form.
fn section(i: usize, route: &Route) -> String {
    let (r, method, path) = (&route.doc, route.method, route.path);
    let body = r.example.unwrap_or("");
    let curl = match r.example {
        Some(ex) => format!(
            "curl -s -X {} http://HOST{} -H 'content-type: application/json' -d '{}'",
            method, path, ex
        ),
        None => format!(
            "curl -s{} http://HOST{}",
            if path.ends_with("events") { "N" } else { "" },
            path
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
    let try_it = if path.ends_with("events") {
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
            m = method,
            p = escape(path),
            bodyfield = if method == "POST" {
                format!(
                    r#"<label>Body <textarea name="body" rows="3" aria-label="Body for {} {}">{}</textarea></label>"#,
                    method,
                    escape(path),
                    escape(body)
                )
            } else {
                String::new()
            }
        )
    };
    format!(
        r#"<section class="route" id="route-{i}">
<h2><span class="method method-{ml}">{m}</span> <code>{p}</code></h2>
<p>{summary}</p>
<p class="meta">{types}{sep}statuses: {statuses}</p>
<pre><code>{curl}</code></pre>
{try_it}
</section>"#,
        ml = method.to_ascii_lowercase(),
        m = method,
        p = escape(path),
        summary = escape(r.summary),
        sep = if types.is_empty() { "" } else { " · " },
        curl = escape(&curl),
    )
}

/// `GET /docs`: the route table as a page, with "Try it" forms.
pub(crate) async fn page(State(state): State<AppState>, routes: &'static [Route]) -> Html<String> {
    let rows: String = routes
        .iter()
        .enumerate()
        .map(|(i, route)| section(i, route))
        .collect();
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
pub(crate) async fn script() -> impl axum::response::IntoResponse {
    (
        [(
            axum::http::header::CONTENT_TYPE,
            "text/javascript; charset=utf-8",
        )],
        include_str!("docs.js"),
    )
}
