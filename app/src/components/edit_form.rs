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
use crate::edit_args::{self, Kind, Spec};
use crate::models::{Conversation, PendingApproval, ToolDescription};
use crate::reloading::reloading;
use leptos::prelude::*;
use serde_json::{Map, Value};

/// One generated field and its live state.
#[derive(Clone)]
struct Field {
    spec: Spec,
    /// The text of the input (for a checkbox: "true"/"false").
    value: ArcRwSignal<String>,
    error: ArcRwSignal<Option<String>>,
}

impl Field {
    fn name(&self) -> &str {
        &self.spec.name
    }
}

/// The fields of `schema` prefilled from `args` (see [`edit_args::specs`]).
fn fields(schema: Option<&Value>, args: &Value) -> Vec<Field> {
    edit_args::specs(schema, args)
        .into_iter()
        .map(|spec| Field {
            value: ArcRwSignal::new(spec.initial.clone()),
            error: ArcRwSignal::new(None),
            spec,
        })
        .collect()
}

/// The field's value as JSON, `Ok(None)` for an empty optional field, or
/// what is wrong with it.
fn read(f: &Field) -> Result<Option<Value>, String> {
    edit_args::read(&f.spec, &f.value.get_untracked())
}

/// Puts the server's answer under the fields it names (`arguments/value:
/// …`, `"value" is a required property`); what names no field is returned.
fn place(fields: &[Field], message: &str) -> Option<String> {
    let mut placed = false;
    for part in message.split("; ") {
        let found = fields.iter().find(|f| {
            part.contains(&format!("arguments/{}:", f.name()))
                || part.contains(&format!("arguments/{}/", f.name()))
                || part.contains(&format!("\"{}\" is a required property", f.name()))
        });
        if let Some(f) = found {
            let why = part.rsplit_once(": ").map(|(_, w)| w).unwrap_or(part);
            f.error.set(Some(why.to_string()));
            placed = true;
        }
    }
    (!placed).then(|| message.to_string())
}

/// The form. `on_done` gets the conversation after the edited approval;
/// `back` is the page to come back to after a post without JavaScript
/// (and, without `?edit=`, what Cancel opens then).
#[component]
pub fn EditForm(
    approval: PendingApproval,
    on_done: Callback<Conversation>,
    on_cancel: Callback<()>,
    back: String,
    form_token: Option<String>,
) -> impl IntoView {
    let tools = ArcResource::new(|| (), |_| api::list_tools());
    let a = approval.clone();
    view! {
        <Transition fallback=|| view! { <p class="muted">"Loading the tool's schema…"</p> }>
            {reloading(move || {
                let (tools, a, back, form_token) = (tools.clone(), a.clone(), back.clone(), form_token.clone());
                Suspend::new(async move {
                    let listed: Option<ToolDescription> = match tools.await {
                        Ok(list) if a.remote_task_id.is_none() => list
                            .tools
                            .into_iter()
                            .find(|t| t.name == a.tool_name),
                        _ => None,
                    };
                    let schema = listed.map(|t| t.input_schema);
                    view! { <Fields approval=a schema=schema on_done=on_done on_cancel=on_cancel back=back form_token=form_token/> }
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
    back: String,
    form_token: Option<String>,
) -> impl IntoView {
    let fields = fields(schema.as_ref(), &approval.tool_args);
    let form_error = ArcRwSignal::new(None::<String>);
    let busy = ArcRwSignal::new(false);
    let submit = {
        let (fields, form_error, busy) = (fields.clone(), form_error.clone(), busy.clone());
        let uuid = approval.uuid.clone();
        move |ev: leptos::ev::SubmitEvent| {
            // Hydrated: decided over the JSON API, errors under the fields.
            // Before hydration the browser posts the form itself.
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
                        args.insert(f.name().to_string(), v);
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
            let id = format!("edit-{}-{}", approval.uuid, f.name());
            let name = format!("{}{}", edit_args::PREFIX, f.name());
            let err_id = format!("{id}-error");
            let value = f.value.clone();
            let error = f.error.clone();
            let has_error = {
                let error = error.clone();
                move || error.with(Option::is_some).to_string()
            };
            let input = match &f.spec.kind {
                Kind::Boolean => {
                    let v2 = value.clone();
                    leptos::either::EitherOf4::A(view! {
                        <input type="checkbox" id=id.clone() name=name value="true"
                            checked=value.get_untracked() == "true"
                            prop:checked=move || value.get() == "true"
                            on:change=move |ev| v2.set(event_target_checked(&ev).to_string())/>
                    })
                }
                Kind::Choice(options) => {
                    let v2 = value.clone();
                    let current = value.get_untracked();
                    leptos::either::EitherOf4::B(view! {
                        <select id=id.clone() name=name aria-invalid=has_error.clone()
                            aria-describedby=err_id.clone()
                            on:change=move |ev| v2.set(event_target_value(&ev))>
                            {options.iter().map(|o| view! {
                                <option value=o.clone() selected=*o == current>{o.clone()}</option>
                            }).collect_view()}
                        </select>
                    })
                }
                Kind::Json => {
                    let v2 = value.clone();
                    let initial = value.get_untracked();
                    leptos::either::EitherOf4::C(view! {
                        <textarea id=id.clone() name=name rows="4" aria-invalid=has_error.clone()
                            aria-describedby=err_id.clone()
                            prop:value=move || value.get()
                            on:input=move |ev| v2.set(event_target_value(&ev))>{initial}</textarea>
                    })
                }
                kind => {
                    let v2 = value.clone();
                    let (ty, step) = match kind {
                        Kind::Integer => ("number", Some("1")),
                        Kind::Number => ("number", Some("any")),
                        _ => ("text", None),
                    };
                    leptos::either::EitherOf4::D(view! {
                        <input type=ty step=step id=id.clone() name=name aria-invalid=has_error.clone()
                            aria-describedby=err_id.clone()
                            value=value.get_untracked()
                            prop:value=move || value.get()
                            on:input=move |ev| v2.set(event_target_value(&ev))/>
                    })
                }
            };
            let shown = error.clone();
            view! {
                <div class="edit-field" data-field=f.name().to_string()>
                    <label for=id>
                        <code>{f.name().to_string()}</code>
                        {f.spec.required.then_some(" (required)")}
                    </label>
                    {f.spec.description.clone().map(|d| view! { <span class="muted edit-help">{d}</span> })}
                    {input}
                    <p class="field-error" id=err_id role="alert">{move || shown.get()}</p>
                </div>
            }
        })
        .collect_view();
    let (busy2, form_error2) = (busy.clone(), form_error.clone());
    let action = format!("/ui/approvals/{}/decide", approval.uuid);
    let close_id = format!("edit-close-{}", approval.uuid);
    let close_action = without_query(&back);
    view! {
        <form class="edit-form" method="post" action=action novalidate=true on:submit=submit aria-label="Edit arguments">
            <input type="hidden" name="form_token" value=form_token.unwrap_or_default()/>
            <input type="hidden" name="back" value=back/>
            <input type="hidden" name="decision" value="approve"/>
            <input type="hidden" name="edit" value="1"/>
            <p class="muted">"Approve with these arguments instead of the model's. The tool runs once with them, and the agent is told what you changed."</p>
            {(schema.is_none()).then(|| view! {
                <p class="muted">"No input schema is known here (a sub-agent's tool): the fields follow the arguments, and the sub-agent checks the edit."</p>
            })}
            {rows}
            <p class="form-error" role="alert">{move || form_error2.get()}</p>
            <div class="approval-actions">
                <button type="submit" class="btn btn-approve" disabled=move || busy2.get()>"Approve with these arguments"</button>
                // Without JavaScript, Cancel opens the page without `?edit=`.
                <button type="submit" class="btn" form=close_id.clone()
                    on:click=move |ev| { ev.prevent_default(); on_cancel.run(()) }>"Cancel"</button>
            </div>
        </form>
        <form id=close_id method="get" action=close_action hidden=true></form>
    }
}

/// `path` without its query string.
pub fn without_query(path: &str) -> String {
    path.split(['?', '#']).next().unwrap_or("/").to_string()
}
