//! A tool's arguments, readable: one row per top-level argument, values as
//! formatted JSON, long values folded behind a "show all" toggle so a huge
//! argument cannot push the buttons off the screen.

use leptos::prelude::*;
use serde_json::Value;

/// Values longer than this (in characters) are folded.
pub const FOLD_AT: usize = 160;

/// The arguments of a call.
#[component]
pub fn ArgsView(args: Value) -> impl IntoView {
    match args {
        Value::Object(map) if !map.is_empty() => view! {
            <dl class="args">
                {map.into_iter().map(|(k, v)| view! {
                    <dt><code>{k}</code></dt>
                    <dd><ArgValue value=v/></dd>
                }).collect_view()}
            </dl>
        }
        .into_any(),
        Value::Object(_) | Value::Null => {
            view! { <p class="muted args-none">"(no arguments)"</p> }.into_any()
        }
        other => view! { <ArgValue value=other/> }.into_any(),
    }
}

#[component]
fn ArgValue(value: Value) -> impl IntoView {
    let text = match &value {
        Value::String(s) => s.clone(),
        other => serde_json::to_string_pretty(other).unwrap_or_default(),
    };
    let quoted = matches!(value, Value::String(_));
    let len = text.chars().count();
    if len <= FOLD_AT {
        let shown = if quoted { format!("\"{text}\"") } else { text };
        view! { <pre class="arg-value">{shown}</pre> }.into_any()
    } else {
        let head: String = text.chars().take(FOLD_AT).collect();
        view! {
            <details class="arg-folded">
                <summary><pre class="arg-value">{format!("{head}…")}</pre>
                    <span class="muted">{format!(" ({len} characters, show all)")}</span></summary>
                <pre class="arg-value">{text}</pre>
            </details>
        }
        .into_any()
    }
}
