//! `GET /audit` (admin; open in mode none) and the `/ui/audit` page.
//!
//! The export is streamed, oldest first, 500 rows per store read, so a
//! trail of millions of rows costs the same memory as a small one:
//! `format=jsonl` (one row per line, as stored) or `format=csv` (a header
//! line, `details` as canonical JSON in one quoted field).

use crate::http::error::ApiError;
use crate::http::extract::ApiQuery;
use crate::http::html::{escape, html_page};
use crate::http::state::AppState;
use crate::store::audit::Row;
use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderValue, header};
use axum::response::{IntoResponse, Response};
use serde::Deserialize;

/// Rows per store read while streaming.
const CHUNK: u32 = 500;

#[derive(Deserialize, Default)]
pub(crate) struct AuditQuery {
    #[serde(default)]
    after: Option<i64>,
    #[serde(default)]
    limit: Option<u64>,
    #[serde(default)]
    format: Option<String>,
    /// `/ui/audit` only: show rows of this event (prefix) or actor.
    #[serde(default)]
    event: Option<String>,
    #[serde(default)]
    actor: Option<String>,
}

#[derive(Clone, Copy, PartialEq)]
enum Format {
    Jsonl,
    Csv,
}

/// `GET /audit?after=SEQ&limit=N&format=jsonl|csv`.
pub(crate) async fn export(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Response, ApiError> {
    let format = match q.format.as_deref().unwrap_or("jsonl") {
        "jsonl" | "json" => Format::Jsonl,
        "csv" => Format::Csv,
        other => {
            return Err(ApiError::BadRequest(format!(
                "format {other:?} is not offered: use jsonl or csv"
            )));
        }
    };
    let after = q.after.unwrap_or(0);
    if after < 0 {
        return Err(ApiError::BadRequest(
            "after must be 0 or a row's seq".into(),
        ));
    }
    let limit = q.limit.unwrap_or(u64::MAX);
    if limit == 0 {
        return Err(ApiError::BadRequest(
            "limit must be at least 1 (leave it out for every row)".into(),
        ));
    }
    // The first chunk is read before answering, so a store failure is a
    // proper 500 rather than a cut-off stream.
    let first = state.store.audit_page(after, chunk(limit)).await?;
    let store = state.store.clone();
    struct Cursor {
        rows: Vec<Row>,
        after: i64,
        left: u64,
        header: bool,
    }
    let start = Cursor {
        after,
        left: limit,
        header: format == Format::Csv,
        rows: first,
    };
    let stream = futures_util::stream::unfold(start, move |mut c| {
        let store = store.clone();
        async move {
            if c.header {
                c.header = false;
                return Some((Ok::<_, std::io::Error>(CSV_HEADER.to_string()), c));
            }
            if c.left == 0 {
                return None;
            }
            if c.rows.is_empty() {
                match store.audit_page(c.after, chunk(c.left)).await {
                    Ok(rows) if !rows.is_empty() => c.rows = rows,
                    Ok(_) => return None,
                    Err(e) => {
                        // The answer has started: end it; the log says why.
                        crate::http::error::log_internal(&e);
                        return None;
                    }
                }
            }
            let take = (c.rows.len() as u64).min(c.left) as usize;
            let rows: Vec<Row> = c.rows.drain(..take).collect();
            c.left -= rows.len() as u64;
            if let Some(last) = rows.last() {
                c.after = last.seq;
            }
            let mut out = String::new();
            for r in &rows {
                match format {
                    Format::Jsonl => {
                        out.push_str(&serde_json::to_string(r).unwrap_or_default());
                        out.push('\n');
                    }
                    Format::Csv => out.push_str(&csv_line(r)),
                }
            }
            Some((Ok(out), c))
        }
    });
    let mut resp = Body::from_stream(stream).into_response();
    let (ct, name) = match format {
        Format::Jsonl => ("application/x-ndjson", "audit.jsonl"),
        Format::Csv => ("text/csv; charset=utf-8", "audit.csv"),
    };
    resp.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(ct));
    if let Ok(v) = HeaderValue::from_str(&format!("attachment; filename=\"{name}\"")) {
        resp.headers_mut().insert(header::CONTENT_DISPOSITION, v);
    }
    Ok(resp)
}

fn chunk(left: u64) -> u32 {
    left.min(u64::from(CHUNK)) as u32
}

const CSV_HEADER: &str =
    "seq,at,actor,event,conversation_id,approval_uuid,details,prev_hash,hash\r\n";

/// One CSV record (RFC 4180: every field quoted, quotes doubled).
fn csv_line(r: &Row) -> String {
    let q = |s: &str| format!("\"{}\"", s.replace('"', "\"\""));
    let fields = [
        r.seq.to_string(),
        q(&r.at),
        q(&r.actor),
        q(&r.event),
        q(r.conversation_id.as_deref().unwrap_or("")),
        q(r.approval_uuid.as_deref().unwrap_or("")),
        q(&crate::domain::digest::canonical(&r.details)),
        q(&r.prev_hash),
        q(&r.hash),
    ];
    let mut line = fields.join(",");
    line.push_str("\r\n");
    line
}

/// `GET /ui/audit`: the newest rows, filterable, with download links.
pub(crate) async fn page(
    State(state): State<AppState>,
    ApiQuery(q): ApiQuery<AuditQuery>,
) -> Result<Response, ApiError> {
    let (count, head) = state.store.audit_head().await?;
    let limit = q.limit.unwrap_or(200).clamp(1, 1000);
    let after = q.after.unwrap_or_else(|| (count - limit as i64).max(0));
    let rows = state.store.audit_page(after, limit as u32).await?;
    let ev = q.event.clone().unwrap_or_default();
    let actor = q.actor.clone().unwrap_or_default();
    let mut body = format!(
        r#"<p>{count} rows; head hash <code id="audit-head">{head}</code>. Check the whole chain with <code>agent audit verify</code>.</p>
<form class="audit-filter" method="get" action="/ui/audit">
<label>Event <input name="event" value="{e}" placeholder="approval."></label>
<label>Actor <input name="actor" value="{a}"></label>
<button type="submit">Filter</button>
<a class="button" href="/audit?format=jsonl" download>Download JSONL</a>
<a class="button" href="/audit?format=csv" download>Download CSV</a>
</form>
<table class="audit"><thead><tr><th>seq</th><th>at</th><th>actor</th><th>event</th><th>conversation</th><th>approval</th><th>details</th></tr></thead><tbody>"#,
        e = escape(&ev),
        a = escape(&actor)
    );
    for r in rows
        .iter()
        .rev()
        .filter(|r| ev.is_empty() || r.event.starts_with(&ev))
        .filter(|r| actor.is_empty() || r.actor == actor)
    {
        let conv = r
            .conversation_id
            .as_deref()
            .map(|c| format!(r#"<a href="/ui/conversations/{0}">{0}</a>"#, escape(c)))
            .unwrap_or_default();
        body.push_str(&format!(
            "<tr><td>{}</td><td>{}</td><td>{}</td><td>{}</td><td>{conv}</td><td>{}</td><td><code>{}</code></td></tr>",
            r.seq,
            escape(&r.at),
            escape(&r.actor),
            escape(&r.event),
            escape(r.approval_uuid.as_deref().unwrap_or("")),
            escape(&crate::domain::digest::canonical(&r.details)),
        ));
    }
    body.push_str("</tbody></table>");
    Ok(html_page(&state.leptos, "Audit trail", &body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn csv_fields_are_quoted_and_quotes_doubled() {
        let r = Row {
            seq: 3,
            at: "t".into(),
            actor: "a\"b".into(),
            event: "e".into(),
            conversation_id: None,
            approval_uuid: Some("u".into()),
            details: serde_json::json!({"x": "y,z"}),
            prev_hash: "p".into(),
            hash: "h".into(),
        };
        assert_eq!(
            csv_line(&r),
            "3,\"t\",\"a\"\"b\",\"e\",\"\",\"u\",\"{\"\"x\"\":\"\"y,z\"\"}\",\"p\",\"h\"\r\n"
        );
    }
}
