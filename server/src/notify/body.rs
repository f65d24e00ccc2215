//! What a notification says, in each format: POLICY.md §5's JSON body,
//! a Slack Block Kit message, and an email's text and HTML parts. All four
//! are built from one stored row and its signed links, so they say the
//! same thing.

use crate::store::outbox::Notification;
use serde_json::{Value, json};

/// The links of one notification.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct LinkSet {
    pub(crate) open: String,
    pub(crate) approve: Option<String>,
    pub(crate) reject: Option<String>,
}

/// POLICY.md §5's body: `{"id","event","at","agent","approval":{...},"links":{...}}`
/// (`tool` instead of `approval` for `tool.changed`, `question` for
/// `question.asked` and `question.expired`; the event's own facts,
/// e.g. `decision`, beside them).
pub(crate) fn json_body(n: &Notification, links: &LinkSet) -> Value {
    let mut body = json!({
        "id": n.delivery.id,
        "event": n.delivery.event,
    });
    if let (Value::Object(b), Value::Object(p)) = (&mut body, &n.payload) {
        for (k, v) in p {
            b.insert(k.clone(), v.clone());
        }
    }
    let mut l = json!({"open": links.open});
    if let Some(a) = &links.approve {
        l["approve"] = a.clone().into();
    }
    if let Some(r) = &links.reject {
        l["reject"] = r.clone().into();
    }
    body["links"] = l;
    body
}

/// The one-line summary: what happened and to what.
pub(crate) fn headline(n: &Notification) -> String {
    let p = &n.payload;
    let agent = p["agent"].as_str().unwrap_or("agent");
    let tool = p["approval"]["tool"].as_str().unwrap_or("");
    match n.delivery.event.as_str() {
        "approval.requested" => format!("{agent}: approval needed for {tool}"),
        "approval.reminder" => format!(
            "{agent}: reminder, {tool} still waits for approval ({} after the request)",
            p["reminder"].as_str().unwrap_or("")
        ),
        "approval.escalated" => format!("{agent}: approval of {tool} escalated"),
        "approval.decided" => format!(
            "{agent}: {tool} was {} by {}",
            p["decision"].as_str().unwrap_or("decided"),
            p["decided_by"].as_str().unwrap_or("someone")
        ),
        "approval.expired" => format!("{agent}: the approval of {tool} expired"),
        "approval.in_doubt" => format!(
            "{agent}: {tool} is in doubt (the agent stopped while it ran; it is not run again)"
        ),
        "question.asked" => format!(
            "{agent}: {} asks: {}",
            p["question"]["tool"].as_str().unwrap_or(""),
            p["question"]["message"].as_str().unwrap_or("")
        ),
        "question.reminder" => format!(
            "{agent}: reminder, {} still asks: {} ({} after it asked)",
            p["question"]["tool"].as_str().unwrap_or(""),
            p["question"]["message"].as_str().unwrap_or(""),
            p["reminder"].as_str().unwrap_or("")
        ),
        "question.expired" => format!(
            "{agent}: nobody answered the question of {} in time",
            p["question"]["tool"].as_str().unwrap_or("")
        ),
        "tool.changed" => format!(
            "{agent}: the definition of tool {} ({}) changed; calls are held until an admin accepts it",
            p["tool"]["name"].as_str().unwrap_or(""),
            p["tool"]["server"].as_str().unwrap_or("")
        ),
        other => format!("{agent}: {other}"),
    }
}

/// The facts as label → text lines, for Slack fields and email.
fn facts(n: &Notification) -> Vec<(&'static str, String)> {
    let p = &n.payload;
    let a = &p["approval"];
    let text = |v: &Value| match v {
        Value::Null => None,
        Value::String(s) if s.is_empty() => None,
        Value::String(s) => Some(s.clone()),
        other => Some(other.to_string()),
    };
    let mut out = Vec::new();
    if a.is_object() {
        let server = text(&a["server"])
            .map(|s| format!(" on {s}"))
            .unwrap_or_default();
        out.push((
            "Tool",
            format!("{}{server}", text(&a["tool"]).unwrap_or_default()),
        ));
        if let Some(d) = text(&a["description"]) {
            out.push(("Description", d));
        }
        out.push(("Rule", text(&a["rule"]).unwrap_or_else(|| "-".into())));
        out.push((
            "Requested by",
            text(&a["requested_by"]).unwrap_or_else(|| "anonymous".into()),
        ));
        out.push((
            "Expires",
            text(&a["expires_at"]).unwrap_or_else(|| "never".into()),
        ));
        if a["quorum"].as_u64().is_some_and(|q| q > 1) {
            out.push(("Quorum", a["quorum"].to_string()));
        }
        if let Some(chain) = a["chain"].as_array().filter(|c| !c.is_empty()) {
            let names: Vec<String> = chain.iter().filter_map(text).collect();
            out.push(("Chain", names.join(" → ")));
        }
    }
    let q = &p["question"];
    if q.is_object() {
        let server = text(&q["server"])
            .map(|s| format!(" on {s}"))
            .unwrap_or_default();
        out.push((
            "Tool",
            format!("{}{server}", text(&q["tool"]).unwrap_or_default()),
        ));
        out.push(("Question", text(&q["message"]).unwrap_or_default()));
        if let Some(u) = text(&q["url"]) {
            out.push(("Link", u));
        }
        out.push((
            "Requested by",
            text(&q["requested_by"]).unwrap_or_else(|| "anonymous".into()),
        ));
        out.push((
            "Expires",
            text(&q["expires_at"]).unwrap_or_else(|| "never".into()),
        ));
        if let Some(chain) = q["chain"].as_array().filter(|c| !c.is_empty()) {
            let names: Vec<String> = chain.iter().filter_map(text).collect();
            out.push(("Chain", names.join(" → ")));
        }
    }
    if let Some(d) = text(&p["decision"]) {
        out.push(("Decision", d));
    }
    if let Some(r) = text(&p["reason"]) {
        out.push(("Reason", r));
    }
    if let Some(t) = p["tool"].as_object() {
        for (k, label) in [
            ("server", "Server"),
            ("pinned_digest", "Pinned"),
            ("new_digest", "New"),
        ] {
            if let Some(v) = t.get(k).and_then(text) {
                out.push((label, v));
            }
        }
    }
    out
}

/// The arguments, pretty-printed (approval events).
fn arguments(n: &Notification) -> Option<String> {
    let args = &n.payload["approval"]["arguments"];
    (!args.is_null()).then(|| serde_json::to_string_pretty(args).unwrap_or_default())
}

/// Slack's mrkdwn needs `&`, `<`, `>` escaped.
pub(crate) fn mrkdwn(s: &str) -> String {
    s.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
}

/// Slack caps a section's text at 3,000 characters.
fn clip(s: &str, max: usize) -> String {
    if s.chars().count() <= max {
        return s.to_string();
    }
    let mut out: String = s.chars().take(max.saturating_sub(1)).collect();
    out.push('…');
    out
}

/// A Slack incoming-webhook message: `text` (the notification fallback)
/// and Block Kit blocks: a header, the facts, the arguments as a code
/// block, and Open / Approve / Reject link buttons. `interactive`: an
/// approval that waits also gets real buttons (REACH.md §2), whose click
/// Slack posts back to us with the approval's uuid (nothing secret).
pub(crate) fn slack_body(n: &Notification, links: &LinkSet, interactive: bool) -> Value {
    let headline = headline(n);
    let mut blocks = vec![json!({
        "type": "header",
        "text": {"type": "plain_text", "text": clip(&headline, 150), "emoji": false}
    })];
    let fields: Vec<Value> = facts(n)
        .into_iter()
        .take(10)
        .map(|(k, v)| json!({"type": "mrkdwn", "text": clip(&format!("*{k}:*\n{}", mrkdwn(&v)), 2000)}))
        .collect();
    if !fields.is_empty() {
        blocks.push(json!({"type": "section", "fields": fields}));
    }
    if let Some(args) = arguments(n) {
        blocks.push(json!({
            "type": "section",
            "text": {"type": "mrkdwn", "text": clip(&format!("```{}```", mrkdwn(&args)), 3000)}
        }));
    }
    // An approve link is made only while the approval waits.
    let real = n.payload["approval"]["uuid"]
        .as_str()
        .filter(|_| interactive && links.approve.is_some());
    if let Some(uuid) = real {
        blocks.push(json!({
            "type": "actions",
            "block_id": "stopgo_decide",
            "elements": [
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Approve"},
                    "style": "primary",
                    "action_id": "stopgo_approve",
                    "value": uuid,
                },
                {
                    "type": "button",
                    "text": {"type": "plain_text", "text": "Reject"},
                    "style": "danger",
                    "action_id": "stopgo_reject",
                    "value": uuid,
                },
            ],
        }));
    }
    let mut buttons = vec![json!({
        "type": "button",
        "text": {"type": "plain_text", "text": "Open"},
        "url": links.open,
        "action_id": "open",
    })];
    if let Some(url) = &links.approve {
        buttons.push(json!({
            "type": "button",
            "text": {"type": "plain_text", "text": if real.is_some() { "Approve in browser" } else { "Approve" }},
            "style": "primary",
            "url": url,
            "action_id": "approve",
        }));
    }
    if let Some(url) = &links.reject {
        buttons.push(json!({
            "type": "button",
            "text": {"type": "plain_text", "text": if real.is_some() { "Reject in browser" } else { "Reject" }},
            "style": "danger",
            "url": url,
            "action_id": "reject",
        }));
    }
    blocks.push(json!({"type": "actions", "elements": buttons}));
    blocks.push(json!({
        "type": "context",
        "elements": [{"type": "mrkdwn", "text": mrkdwn(&format!("{} · {}", n.delivery.event, n.delivery.id))}]
    }));
    json!({"text": headline, "blocks": blocks})
}

/// An email's subject, plain text and HTML, with the same content and links.
pub(crate) fn email(n: &Notification, links: &LinkSet) -> (String, String, String) {
    let subject = headline(n);
    let facts = facts(n);
    let args = arguments(n);
    let mut text = format!("{subject}\n\n");
    for (k, v) in &facts {
        text.push_str(&format!("{k}: {v}\n"));
    }
    if let Some(a) = &args {
        text.push_str(&format!("\nArguments:\n{a}\n"));
    }
    text.push_str(&format!("\nOpen: {}\n", links.open));
    if let Some(u) = &links.approve {
        text.push_str(&format!("Approve: {u}\n"));
    }
    if let Some(u) = &links.reject {
        text.push_str(&format!("Reject: {u}\n"));
    }
    // An approval's links are signed and work once; a question's Open link
    // is its conversation's page.
    let once = if n.payload["approval"].is_object() {
        "Each link works once; opening one shows the approval and decides nothing by itself. "
    } else {
        ""
    };
    text.push_str(&format!(
        "\n{once}({} {})\n",
        n.delivery.event, n.delivery.id
    ));
    let e = crate::domain::text::escape;
    let mut html = format!(
        "<!doctype html><html><body style=\"font-family:sans-serif\"><h2>{}</h2><table>",
        e(&subject)
    );
    for (k, v) in &facts {
        html.push_str(&format!(
            "<tr><th align=\"left\">{}</th><td>{}</td></tr>",
            e(k),
            e(v)
        ));
    }
    html.push_str("</table>");
    if let Some(a) = &args {
        html.push_str(&format!("<h3>Arguments</h3><pre>{}</pre>", e(a)));
    }
    html.push_str(&format!("<p><a href=\"{}\">Open</a>", e(&links.open)));
    if let Some(u) = &links.approve {
        html.push_str(&format!(" · <a href=\"{}\">Approve</a>", e(u)));
    }
    if let Some(u) = &links.reject {
        html.push_str(&format!(" · <a href=\"{}\">Reject</a>", e(u)));
    }
    html.push_str(&format!(
        "</p><p><small>{once}({} {})</small></p></body></html>",
        e(&n.delivery.event),
        e(&n.delivery.id)
    ));
    (subject, text, html)
}
