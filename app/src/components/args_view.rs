//! A tool's arguments, readable: one row per top-level argument, values as
//! formatted JSON, long values folded behind a "show all" toggle so a huge
//! argument cannot push the buttons off the screen.

use leptos::either::{Either, EitherOf3};
use leptos::prelude::*;
use serde_json::Value;

/// Values longer than this (in characters) are folded.
pub const FOLD_AT: usize = 160;

/// The arguments of a call.
#[component]
pub fn ArgsView(args: Value) -> impl IntoView {
    match args {
        Value::Object(map) if !map.is_empty() => EitherOf3::A(view! {
            <dl class="args">
                {map.into_iter().map(|(k, v)| view! {
                    <dt><code>{k}</code></dt>
                    <dd><ArgValue value=v/></dd>
                }).collect_view()}
            </dl>
        }),
        Value::Object(_) | Value::Null => {
            EitherOf3::B(view! { <p class="muted args-none">"(no arguments)"</p> })
        }
        other => EitherOf3::C(view! { <ArgValue value=other/> }),
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
        Either::Left(view! { <pre class="arg-value">{shown}</pre> })
    } else {
        let head: String = text.chars().take(FOLD_AT).collect();
        Either::Right(view! {
            <details class="arg-folded">
                <summary><pre class="arg-value">{format!("{head}…")}</pre>
                    <span class="muted">{format!(" ({len} characters, show all)")}</span></summary>
                <pre class="arg-value">{text}</pre>
            </details>
        })
    }
}
