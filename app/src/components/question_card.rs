//! The question card (QUESTIONS.md §2): what a tool asks, and a form built
//! from the schema it asked with: one field per property, labelled by its
//! `title` (or name) with its `description`, enums as choices, defaults
//! filled, required fields marked; Send, Decline and Cancel. A URL
//! question shows its link (only `https://` or a loopback `http://`), Done
//! and Decline.
//!
//! The form is a plain HTML post to `/ui/questions/:uuid/answer`, with
//! JavaScript or without (REACH.md §1): the server reads the fields by the
//! question's schema, answers through the same engine command as
//! `POST /questions/:uuid` and sends the browser back here.

use crate::models::{Question, QuestionKind, Viewer};
use leptos::prelude::*;
use serde_json::Value;

/// Why this viewer may not answer, if they may not: only whoever sent the
/// conversation's latest message, or an approver (or admin).
pub fn refusal(viewer: &Viewer, q: &Question) -> Option<String> {
    if viewer.mode == "none" || viewer.mode.is_empty() || viewer.can_decide {
        return None;
    }
    if viewer.name.is_some() && viewer.name == q.requested_by {
        return None;
    }
    Some(format!(
        "You ({}) cannot answer: only whoever sent the latest message ({}) or an approver may.",
        viewer.name.as_deref().unwrap_or("anonymous"),
        q.requested_by.as_deref().unwrap_or("?")
    ))
}

/// Whether a URL question's link may be shown as a link.
pub fn safe_link(url: &str) -> bool {
    let lower = url.to_ascii_lowercase();
    if lower.starts_with("https://") {
        return true;
    }
    let Some(rest) = lower.strip_prefix("http://") else {
        return false;
    };
    let host = rest.split(['/', '?', '#']).next().unwrap_or("");
    let host = host.rsplit_once('@').map_or(host, |(_, h)| h);
    let host = if host.starts_with('[') {
        host.split(']').next().unwrap_or("").trim_start_matches('[')
    } else {
        host.split(':').next().unwrap_or("")
    };
    host == "localhost"
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback())
}

/// A pending question with its form.
#[component]
pub fn QuestionCard(question: Question, viewer: Viewer, back: String) -> impl IntoView {
    let q = question;
    let title_id = format!("question-title-{}", q.uuid);
    let labelled_by = title_id.clone();
    let action = format!("/ui/questions/{}/answer", q.uuid);
    let token = viewer.form_token.clone().unwrap_or_default();
    let refused = refusal(&viewer, &q);
    let chain = (!q.chain.is_empty()).then(|| q.chain.join(" → "));
    let body = match refused {
        Some(why) => leptos::either::Either::Left(view! {
            <p class="decide-refused" role="note">{why}</p>
        }),
        None => leptos::either::Either::Right(match q.kind {
            QuestionKind::Form => leptos::either::Either::Left(view! {
                <form class="question-form" method="post" action=action>
                    <input type="hidden" name="form_token" value=token/>
                    <input type="hidden" name="back" value=back/>
                    {fields(q.uuid.clone(), q.schema.clone())}
                    <div class="approval-actions">
                        <button type="submit" name="action" value="accept" class="btn btn-approve">"Send"</button>
                        <button type="submit" name="action" value="decline" class="btn btn-reject" formnovalidate=true>"Decline"</button>
                        <button type="submit" name="action" value="cancel" class="btn" formnovalidate=true>"Cancel"</button>
                    </div>
                </form>
            }),
            QuestionKind::Url => {
                let url = q.url.clone().unwrap_or_default();
                let link = if safe_link(&url) {
                    leptos::either::Either::Left(view! {
                        <p><a class="question-link" href=url.clone() target="_blank" rel="noopener noreferrer">{url.clone()}</a></p>
                    })
                } else {
                    leptos::either::Either::Right(view! {
                        <p class="question-link-unsafe">"The tool gave an address this page does not open as a link: "<code>{url.clone()}</code></p>
                    })
                };
                leptos::either::Either::Right(view! {
                    {link}
                    <form class="question-form" method="post" action=action>
                        <input type="hidden" name="form_token" value=token/>
                        <input type="hidden" name="back" value=back/>
                        <div class="approval-actions">
                            <button type="submit" name="action" value="accept" class="btn btn-approve">"Done"</button>
                            <button type="submit" name="action" value="decline" class="btn btn-reject">"Decline"</button>
                        </div>
                    </form>
                })
            }
        }),
    };
    view! {
        <section class="approval-card question-card" role="region" aria-labelledby=labelled_by
            data-question=q.uuid.clone()>
            <h2 id=title_id class="approval-title">
                <code>{q.tool_call.tool.clone()}</code>
                {q.tool_call.server.clone().map(|s| view! { <span class="muted">" on " {s}</span> })}
                " asks"
            </h2>
            {chain.map(|c| view! { <p class="muted question-chain">"Through " {c}</p> })}
            <p class="question-message">{q.message.clone()}</p>
            {body}
        </section>
    }
}

/// One form field per property of the schema.
fn fields(uuid: String, schema: Option<Value>) -> impl IntoView {
    let schema = schema.unwrap_or(Value::Null);
    let required: Vec<String> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| {
            r.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect()
        })
        .unwrap_or_default();
    let props: Vec<(String, Value)> = schema
        .get("properties")
        .and_then(Value::as_object)
        .map(|m| m.iter().map(|(k, v)| (k.clone(), v.clone())).collect())
        .unwrap_or_default();
    props
        .into_iter()
        .map(|(name, p)| {
            let required = required.contains(&name);
            field(uuid.clone(), name, p, required)
        })
        .collect_view()
}

fn field(uuid: String, name: String, p: Value, required: bool) -> impl IntoView {
    let id = format!("q-{uuid}-{name}");
    let label = p
        .get("title")
        .and_then(Value::as_str)
        .unwrap_or(&name)
        .to_string();
    let description = p
        .get("description")
        .and_then(Value::as_str)
        .map(String::from);
    let input_name = format!("field.{name}");
    let kind = p
        .get("type")
        .and_then(Value::as_str)
        .unwrap_or("string")
        .to_string();
    let default = p.get("default").cloned();
    let mark = required.then(|| view! { <span class="required" aria-hidden="true">" *"</span> });
    let help = description.map(|d| view! { <small class="field-help">{d}</small> });
    let control = if let Some(options) = choices(&p) {
        let chosen = default.as_ref().and_then(Value::as_str).map(String::from);
        leptos::either::EitherOf4::A(view! {
            <select id=id.clone() name=input_name required=required>
                {(!required || chosen.is_none()).then(|| view! { <option value="">"—"</option> })}
                {options.into_iter().map(|(value, text)| {
                    let selected = chosen.as_deref() == Some(value.as_str());
                    view! { <option value=value selected=selected>{text}</option> }
                }).collect_view()}
            </select>
        })
    } else if kind == "boolean" {
        let checked = default.as_ref().and_then(Value::as_bool).unwrap_or(false);
        leptos::either::EitherOf4::B(view! {
            <input type="hidden" name=format!("bool.{name}") value="1"/>
            <input type="checkbox" id=id.clone() name=input_name value="true" checked=checked/>
        })
    } else if kind == "array" {
        let options = p.get("items").map(choices_of_items).unwrap_or_default();
        let chosen: Vec<String> = default
            .as_ref()
            .and_then(Value::as_array)
            .map(|d| {
                d.iter()
                    .filter_map(Value::as_str)
                    .map(String::from)
                    .collect()
            })
            .unwrap_or_default();
        leptos::either::EitherOf4::C(view! {
            <span class="choices" id=id.clone()>
                {options.into_iter().map(|(value, text)| {
                    let checked = chosen.contains(&value);
                    view! {
                        <label class="choice">
                            <input type="checkbox" name=input_name.clone() value=value checked=checked/>
                            " " {text}
                        </label>
                    }
                }).collect_view()}
            </span>
        })
    } else {
        let (html_type, step) = match (kind.as_str(), p.get("format").and_then(Value::as_str)) {
            ("integer", _) => ("number", Some("1")),
            ("number", _) => ("number", Some("any")),
            (_, Some("email")) => ("email", None),
            (_, Some("uri")) => ("url", None),
            (_, Some("date")) => ("date", None),
            _ => ("text", None),
        };
        let value = default.map(|d| match d {
            Value::String(s) => s,
            other => other.to_string(),
        });
        let num = |k: &str| p.get(k).and_then(Value::as_f64).map(|n| n.to_string());
        let len = |k: &str| p.get(k).and_then(Value::as_u64).map(|n| n.to_string());
        leptos::either::EitherOf4::D(view! {
            <input type=html_type id=id.clone() name=input_name value=value required=required
                step=step min=num("minimum") max=num("maximum")
                minlength=len("minLength") maxlength=len("maxLength")/>
        })
    };
    view! {
        <div class="question-field">
            <label for=id>{label}{mark}</label>
            {control}
            {help}
        </div>
    }
}

/// An enum property's `(value, label)` choices.
fn choices(p: &Value) -> Option<Vec<(String, String)>> {
    if let Some(values) = p.get("enum").and_then(Value::as_array) {
        let names = p.get("enumNames").and_then(Value::as_array);
        return Some(
            values
                .iter()
                .enumerate()
                .filter_map(|(i, v)| {
                    let v = v.as_str()?.to_string();
                    let label = names
                        .and_then(|n| n.get(i))
                        .and_then(Value::as_str)
                        .map(String::from)
                        .unwrap_or_else(|| v.clone());
                    Some((v, label))
                })
                .collect(),
        );
    }
    p.get("oneOf")
        .and_then(Value::as_array)
        .map(|list| consts(list))
}

fn choices_of_items(items: &Value) -> Vec<(String, String)> {
    if let Some(values) = items.get("enum").and_then(Value::as_array) {
        return values
            .iter()
            .filter_map(Value::as_str)
            .map(|v| (v.to_string(), v.to_string()))
            .collect();
    }
    items
        .get("anyOf")
        .or_else(|| items.get("oneOf"))
        .and_then(Value::as_array)
        .map(|list| consts(list))
        .unwrap_or_default()
}

fn consts(list: &[Value]) -> Vec<(String, String)> {
    list.iter()
        .filter_map(|o| {
            let v = o.get("const")?.as_str()?.to_string();
            let label = o
                .get("title")
                .and_then(Value::as_str)
                .map(String::from)
                .unwrap_or_else(|| v.clone());
            Some((v, label))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::safe_link;

    #[test]
    fn only_https_and_loopback_http_are_links() {
        assert!(safe_link("https://billing.example.test/oauth?state=xyz"));
        assert!(safe_link("http://127.0.0.1:8080/cb"));
        assert!(safe_link("http://localhost/x"));
        assert!(safe_link("http://[::1]:9/x"));
        assert!(!safe_link("http://example.com/x"));
        assert!(!safe_link("http://127.0.0.1.evil.test/x"));
        assert!(!safe_link("javascript:alert(1)"));
        assert!(!safe_link("http://evil.test@127.0.0.1.nip.io/"));
    }
}
