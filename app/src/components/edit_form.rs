//! "Edit arguments" on the approval card (POLICY.md §3): approve with
//! arguments fixed by the approver instead of rejecting and re-prompting.
//!
//! The form is generated from the tool's `inputSchema` (`GET /tools`): one
//! field per property, typed (a number input for numbers, a checkbox for
//! booleans, a list for enums, JSON for objects and arrays), prefilled with
//! the model's arguments, required ones marked. What the browser can check
//! (a required field left empty, a number that is not one, JSON that does
//! not parse) is said under the field before anything is sent; the server
//! checks the rest (the schema, the rules) and its answer is shown under
//! the field it names, or above the form. A proxy approval's tool lives on
//! a sub-agent, whose schema is not listed here: its fields follow the
//! arguments' own types, and the sub-agent checks the edit.

use crate::api;
use crate::models::{Conversation, PendingApproval, ToolDescription};
use crate::reloading::reloading;
use leptos::prelude::*;
use serde_json::{Map, Value};

/// How a field is edited and read back.
#[derive(Clone, Debug, PartialEq)]
enum Kind {
    Integer,
    Number,
    Boolean,
    Choice(Vec<String>),
    Text,
    /// Objects, arrays and anything else: JSON text.
    Json,
}

/// One generated field.
#[derive(Clone)]
struct Field {
    name: String,
    kind: Kind,
    required: bool,
    description: Option<String>,
    /// The text of the input (for a checkbox: "true"/"false").
    value: ArcRwSignal<String>,
    error: ArcRwSignal<Option<String>>,
}

/// The fields of `schema` (an object schema) prefilled from `args`; with
/// no schema, the fields of `args` with their values' types.
fn fields(schema: Option<&Value>, args: &Value) -> Vec<Field> {
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<String> = props
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(a) = args.as_object() {
        for k in a.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let prop = props.and_then(|p| p.get(&name));
            let current = args.get(&name);
            let kind = kind_of(prop, current);
            let value = match (current, &kind) {
                (None | Some(Value::Null), Kind::Boolean) => "false".to_string(),
                (None | Some(Value::Null), _) => String::new(),
                (Some(Value::String(s)), Kind::Text | Kind::Choice(_)) => s.clone(),
                (Some(v), Kind::Json) => serde_json::to_string_pretty(v).unwrap_or_default(),
                (Some(v), _) => match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            };
            Field {
                required: required.contains(&name.as_str()),
                description: prop
                    .and_then(|p| p.get("description"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                name,
                kind,
                value: ArcRwSignal::new(value),
                error: ArcRwSignal::new(None),
            }
        })
        .collect()
}

fn kind_of(prop: Option<&Value>, current: Option<&Value>) -> Kind {
    if let Some(choices) = prop.and_then(|p| p.get("enum")).and_then(Value::as_array)
        && choices.iter().all(Value::is_string)
    {
        return Kind::Choice(
            choices
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        );
    }
    let declared = prop.and_then(|p| p.get("type")).and_then(|t| match t {
        Value::String(s) => Some(s.as_str()),
        // ["integer", "null"]: the first non-null type.
        Value::Array(a) => a.iter().filter_map(Value::as_str).find(|s| *s != "null"),
        _ => None,
    });
    match declared {
        Some("integer") => Kind::Integer,
        Some("number") => Kind::Number,
        Some("boolean") => Kind::Boolean,
        Some("string") => Kind::Text,
        Some(_) => Kind::Json,
        None => match current {
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Kind::Integer,
            Some(Value::Number(_)) => Kind::Number,
            Some(Value::Bool(_)) => Kind::Boolean,
            Some(Value::String(_)) => Kind::Text,
            _ => Kind::Json,
        },
    }
}

/// The field's value as JSON, `Ok(None)` for an empty optional field, or
/// what is wrong with it.
fn read(f: &Field) -> Result<Option<Value>, String> {
    let text = f.value.get_untracked();
    let t = text.trim();
    if t.is_empty() && !matches!(f.kind, Kind::Boolean | Kind::Text) {
        return if f.required {
            Err("is required".into())
        } else {
            Ok(None)
        };
    }
    match &f.kind {
        Kind::Integer => t
            .parse::<i64>()
            .map(|n| Some(Value::from(n)))
            .map_err(|_| "must be a whole number".into()),
        Kind::Number => t
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| "must be a number".into()),
        Kind::Boolean => Ok(Some(Value::Bool(t == "true"))),
        Kind::Choice(_) => Ok(Some(Value::String(t.to_string()))),
        Kind::Text if text.is_empty() && !f.required => Ok(None),
        Kind::Text => Ok(Some(Value::String(text))),
        Kind::Json => serde_json::from_str(t)
            .map(Some)
            .map_err(|e| format!("is not valid JSON: {e}")),
    }
}

/// Puts the server's answer under the fields it names (`arguments/value:
/// …`, `"value" is a required property`); what names no field is returned.
fn place(fields: &[Field], message: &str) -> Option<String> {
    let mut placed = false;
    for part in message.split("; ") {
        let found = fields.iter().find(|f| {
            part.contains(&format!("arguments/{}:", f.name))
                || part.contains(&format!("arguments/{}/", f.name))
                || part.contains(&format!("\"{}\" is a required property", f.name))
        });
        if let Some(f) = found {
            let why = part.rsplit_once(": ").map(|(_, w)| w).unwrap_or(part);
            f.error.set(Some(why.to_string()));
            placed = true;
        }
    }
    (!placed).then(|| message.to_string())
}

/// The form. `on_done` gets the conversation after the edited approval.
#[component]
pub fn EditForm(
    approval: PendingApproval,
    on_done: Callback<Conversation>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let tools = ArcResource::new(|| (), |_| api::list_tools());
    let a = approval.clone();
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading the tool's schema…"</p> }>
            {reloading(move || {
                let (tools, a) = (tools.clone(), a.clone());
                Suspend::new(async move {
                    let listed: Option<ToolDescription> = match tools.await {
                        Ok(list) if a.remote_task_id.is_none() => list
                            .tools
                            .into_iter()
                            .find(|t| t.name == a.tool_name),
                        _ => None,
                    };
                    let schema = listed.map(|t| t.input_schema);
                    view! { <Fields approval=a schema=schema on_done=on_done on_cancel=on_cancel/> }
                })
            })}
        </Transition>
    }
}

#[component]
fn Fields(
    approval: PendingApproval,
    schema: Option<Value>,
    on_done: Callback<Conversation>,
    on_cancel: Callback<()>,
) -> impl IntoView {
    let fields = fields(schema.as_ref(), &approval.tool_args);
    let form_error = ArcRwSignal::new(None::<String>);
    let busy = ArcRwSignal::new(false);
    let submit = {
        let (fields, form_error, busy) = (fields.clone(), form_error.clone(), busy.clone());
        let uuid = approval.uuid.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            if busy.get_untracked() {
                return;
            }
            form_error.set(None);
            let mut args = Map::new();
            let mut ok = true;
            for f in &fields {
                f.error.set(None);
                match read(f) {
                    Ok(Some(v)) => {
                        args.insert(f.name.clone(), v);
                    }
                    Ok(None) => {}
                    Err(e) => {
                        f.error.set(Some(e));
                        ok = false;
                    }
                }
            }
            if !ok {
                return;
            }
            busy.set(true);
            let (fields, form_error, busy, uuid) = (
                fields.clone(),
                form_error.clone(),
                busy.clone(),
                uuid.clone(),
            );
            leptos::task::spawn_local(async move {
                let sent = api::decide(uuid, true, None, Some(Value::Object(args))).await;
                busy.set(false);
                match sent {
                    Ok(r) => on_done.run(r.conversation),
                    Err(e) => form_error.set(place(&fields, &e.message)),
                }
            });
        }
    };
    let rows = fields
        .iter()
        .map(|f| {
            let id = format!("edit-{}-{}", approval.uuid, f.name);
            let err_id = format!("{id}-error");
            let value = f.value.clone();
            let error = f.error.clone();
            let has_error = {
                let error = error.clone();
                move || error.with(Option::is_some).to_string()
            };
            let input = match &f.kind {
                Kind::Boolean => {
                    let v2 = value.clone();
                    view! {
                        <input type="checkbox" id=id.clone() name=f.name.clone()
                            prop:checked=move || value.get() == "true"
                            on:change=move |ev| v2.set(event_target_checked(&ev).to_string())/>
                    }
                    .into_any()
                }
                Kind::Choice(options) => {
                    let v2 = value.clone();
                    let current = value.get_untracked();
                    view! {
                        <select id=id.clone() name=f.name.clone() aria-invalid=has_error.clone()
                            aria-describedby=err_id.clone()
                            on:change=move |ev| v2.set(event_target_value(&ev))>
                            {options.iter().map(|o| view! {
                                <option value=o.clone() selected=*o == current>{o.clone()}</option>
                            }).collect_view()}
                        </select>
                    }
                    .into_any()
                }
                Kind::Json => {
                    let v2 = value.clone();
                    view! {
                        <textarea id=id.clone() name=f.name.clone() rows="4" aria-invalid=has_error.clone()
                            aria-describedby=err_id.clone()
                            prop:value=move || value.get()
                            on:input=move |ev| v2.set(event_target_value(&ev))></textarea>
                    }
                    .into_any()
                }
                kind => {
                    let v2 = value.clone();
                    let (ty, step) = match kind {
                        Kind::Integer => ("number", Some("1")),
                        Kind::Number => ("number", Some("any")),
                        _ => ("text", None),
                    };
                    view! {
                        <input type=ty step=step id=id.clone() name=f.name.clone() aria-invalid=has_error.clone()
                            aria-describedby=err_id.clone()
                            prop:value=move || value.get()
                            on:input=move |ev| v2.set(event_target_value(&ev))/>
                    }
                    .into_any()
                }
            };
            let shown = error.clone();
            view! {
                <div class="edit-field" data-field=f.name.clone()>
                    <label for=id>
                        <code>{f.name.clone()}</code>
                        {f.required.then_some(" (required)")}
                    </label>
                    {f.description.clone().map(|d| view! { <span class="muted edit-help">{d}</span> })}
                    {input}
                    <p class="field-error" id=err_id role="alert">{move || shown.get()}</p>
                </div>
            }
        })
        .collect_view();
    let (busy2, form_error2) = (busy.clone(), form_error.clone());
    view! {
        <form class="edit-form" novalidate=true on:submit=submit aria-label="Edit arguments">
            <p class="muted">"Approve with these arguments instead of the model's. The tool runs once with them, and the agent is told what you changed."</p>
            {(schema.is_none()).then(|| view! {
                <p class="muted">"No input schema is known here (a sub-agent's tool): the fields follow the arguments, and the sub-agent checks the edit."</p>
            })}
            {rows}
            <p class="form-error" role="alert">{move || form_error2.get()}</p>
            <div class="approval-actions">
                <button type="submit" class="btn btn-approve" disabled=move || busy2.get()>"Approve with these arguments"</button>
                <button type="button" class="btn" on:click=move |_| on_cancel.run(())>"Cancel"</button>
            </div>
        </form>
    }
}
