//! `/ui/link/:token`: where a notification's Open / Approve / Reject link
//! lands (POLICY.md §5). Opening decides nothing: the page shows the
//! approval alone with one button (both for an Open link), and the click
//! posts the decision as the signed-in operator, checked like any other.
//! A used, expired, decided or tampered link says so instead.

use crate::api;
use crate::components::args_view::ArgsView;
use crate::models::LinkView;
use crate::reloading::reloading;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

#[component]
pub fn LinkPage() -> impl IntoView {
    let params = use_params_map();
    let token = move || params.read().get("token").unwrap_or_default();
    let link = ArcResource::new(token, api::link_view);
    view! {
        <section class="page-head"><h1>"Approval link"</h1></section>
        <Transition fallback=|| view! { <p class="muted">"Loading the approval…"</p> }>
            {reloading(move || { let link = link.clone(); Suspend::new(async move {
                let form_token = crate::components::viewer::current().await.form_token.unwrap_or_default();
                match link.await {
                    Ok(v) => leptos::either::Either::Left(view! { <LinkCard view=v token=token() form_token=form_token/> }),
                    Err(e) => leptos::either::Either::Right(view! {
                        <section class="panel empty" role="alert" id="link-refused" data-link-state="invalid">
                            <h2>"This link cannot be used"</h2>
                            <p>{e.to_string()}</p>
                            <p><a href="/ui/approvals">"See the approvals waiting"</a></p>
                        </section>
                    }),
                }
            })})}
        </Transition>
    }
}

#[component]
fn LinkCard(view: LinkView, token: String, form_token: String) -> impl IntoView {
    let a = view.approval.clone();
    // After a decision posted without JavaScript the page comes back with
    // `?done=approved|rejected`: the link is used now, by this decision.
    let posted = leptos_router::hooks::use_query_map()
        .with_untracked(|q| q.get("done"))
        .filter(|_| view.state == "used")
        .and_then(|d| match d.as_str() {
            "approved" => Some("Approved: the agent goes on.".to_string()),
            "rejected" => Some("Rejected: the agent was told.".to_string()),
            _ => None,
        });
    let message = if posted.is_some() {
        None
    } else {
        view.message.clone()
    };
    let done = ArcRwSignal::new(posted);
    let error = ArcRwSignal::new(None::<String>);
    let busy = ArcRwSignal::new(false);
    let reason = ArcRwSignal::new(String::new());
    let conversation = format!("/ui/conversations/{}", a.conversation_id);
    let usable = view.state == "valid";
    let decide = {
        let (done, error, busy, reason, token) = (
            done.clone(),
            error.clone(),
            busy.clone(),
            reason.clone(),
            token.clone(),
        );
        move |send: Option<bool>, approve: bool| {
            let (done, error, busy, token) =
                (done.clone(), error.clone(), busy.clone(), token.clone());
            let why = reason.get_untracked();
            busy.set(true);
            leptos::task::spawn_local(async move {
                match api::use_link(token, send, Some(why)).await {
                    Ok(_) => done.set(Some(
                        if approve {
                            "Approved: the agent goes on."
                        } else {
                            "Rejected: the agent was told."
                        }
                        .into(),
                    )),
                    Err(e) => error.set(Some(e.to_string())),
                }
                busy.set(false);
            });
        }
    };
    let buttons = match view.action.as_str() {
        // (label, what to send, approves, style): an approve or reject
        // link sends `{}`, an open link says which.
        "approve" => vec![("Approve", None, true, "btn btn-approve")],
        "reject" => vec![("Reject", None, false, "btn btn-reject")],
        _ => vec![
            ("Approve", Some(true), true, "btn btn-approve"),
            ("Reject", Some(false), false, "btn btn-reject"),
        ],
    };
    let action = format!("/ui/link/{token}");
    let shown_done = done.clone();
    let shown_error = error.clone();
    view! {
        <article class="card approval-card" id="link-card" data-link-state=view.state.clone() data-link-action=view.action.clone()>
            <h2>"Approval needed: " <code>{a.tool_name.clone()}</code></h2>
            {a.server.clone().map(|s| view! { <p class="muted">"on " {s}</p> })}
            <p class="approval-description" inner_html=crate::markdown::to_safe_inline_html(&a.description)></p>
            <ArgsView args=a.tool_args.clone()/>
            <dl class="facts">
                <dt>"Rule"</dt><dd>{a.rule.clone().unwrap_or_else(|| "-".into())}</dd>
                <dt>"Requested by"</dt><dd>{a.requested_by.clone().unwrap_or_else(|| "anonymous".into())}</dd>
                <dt>"Expires"</dt><dd>{a.expires_at.clone().unwrap_or_else(|| "never".into())}</dd>
                <dt>"Status"</dt><dd id="link-status">{view.status.as_str()}</dd>
            </dl>
            {message.map(|m| view! { <p class="alert alert-error" role="alert" id="link-message">{m}</p> })}
            {usable.then(|| {
                let decide = decide.clone();
                let (reason, typed) = (reason.clone(), reason.clone());
                view! {
                    // A plain form post before hydration (or without
                    // JavaScript): the server decides and comes back here
                    // with `?done=`; once hydrated the click posts the JSON.
                    <form class="link-actions" method="post" action=action hidden=move || shown_done.get().is_some()>
                        <input type="hidden" name="form_token" value=form_token.clone()/>
                        {crate::components::approval_card::implicit_submit_guard()}
                        <label>"Reason (optional) "
                            <input type="text" id="link-reason" name="reason" prop:value=move || reason.get()
                                on:input=move |ev| typed.set(event_target_value(&ev))/>
                        </label>
                        {buttons.into_iter().map(|(label, send, approve, class)| {
                            let decide = decide.clone();
                            let busy = busy.clone();
                            view! {
                                <button type="submit" name="decision" value=if approve { "approve" } else { "reject" }
                                    class=class data-link-button=label
                                    disabled=move || busy.get()
                                    on:click=move |ev| { ev.prevent_default(); decide(send, approve) }>
                                    {label}
                                </button>
                            }
                        }).collect_view()}
                    </form>
                }
            })}
            <p class="notice" role="status" id="link-done">{move || done.get()}</p>
            <p class="form-error" role="alert">{move || shown_error.get()}</p>
            <p><a href=conversation>"Open the conversation"</a></p>
        </article>
    }
}
