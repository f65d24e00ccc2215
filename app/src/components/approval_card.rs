//! The approval card: what will run, with which arguments, on which server
//! or agent, who asked (the chain for a proxy approval), and the Approve /
//! Reject buttons. It takes the keyboard focus when it appears, so a
//! keyboard or screen-reader user lands on the decision. A viewer who may
//! not decide (no approver role, or their own request under separation of
//! duties) sees why instead of the buttons.

use crate::components::args_view::ArgsView;
use crate::components::time::short_time;
use crate::models::PendingApproval;
use crate::reloading::reloading;
use leptos::prelude::*;

/// A pending approval. `on_decide(approved, reason)` is called on a click;
/// `busy` disables both buttons while a decision is in flight.
#[component]
pub fn ApprovalCard(
    approval: PendingApproval,
    busy: ArcSignal<bool>,
    on_decide: Callback<(bool, Option<String>)>,
    /// Move the focus here when shown (the chat does; the inbox does not).
    #[prop(optional)]
    autofocus: bool,
    /// Offers "Edit arguments" (POLICY.md §3); gets the conversation after
    /// an approval with edited arguments.
    #[prop(optional)]
    on_edited: Option<Callback<crate::models::Conversation>>,
) -> impl IntoView {
    // "Edit arguments" is open when the page was asked for it
    // (`?edit=<uuid>`: the button's plain GET without JavaScript), or
    // once it is pressed in the hydrated page.
    let here = here();
    let asked_edit = leptos_router::hooks::use_query_map()
        .with_untracked(|q| q.get("edit").as_deref() == Some(approval.uuid.as_str()));
    let editing = ArcRwSignal::new(asked_edit);
    // Reference-counted, like the conversation view that shows the card.
    let reason = ArcRwSignal::new(String::new());
    let chain = approval
        .chain
        .clone()
        .filter(|c| !c.is_empty())
        .map(|c| c.join(" → "));
    let reason_value = {
        let reason = reason.clone();
        move || Some(reason.get()).filter(|r| !r.trim().is_empty())
    };
    let card = NodeRef::<leptos::html::Section>::new();
    if autofocus {
        Effect::new(move |_| {
            if let Some(el) = card.get() {
                let _ = el.focus();
            }
        });
    }
    let reason_id = format!("reason-{}", approval.uuid);
    let title_id = format!("approval-title-{}", approval.uuid);
    let labelled_by = title_id.clone();
    let for_actions = approval.clone();
    view! {
        <section class="approval-card" role="region" aria-labelledby=labelled_by
                 tabindex="-1" node_ref=card data-approval=approval.uuid.clone()>
            <h2 id=title_id>"Approval needed"</h2>
            <p class="approval-description" inner_html=crate::markdown::to_safe_inline_html(&approval.description)></p>
            <dl class="facts">
                <dt>"Tool"</dt><dd><code class="approval-tool">{approval.tool_name.clone()}</code></dd>
                {approval.server.clone().map(|s| view! { <dt>"Server"</dt><dd class="approval-server">{s}</dd> })}
                {approval.remote_agent_name.clone().map(|a| view! { <dt>"Agent"</dt><dd>{a}</dd> })}
                {chain.map(|c| view! { <dt>"Asked via"</dt><dd class="approval-chain">{c}</dd> })}
                {approval.requested_by.clone().map(|r| view! { <dt>"Asked by"</dt><dd class="approval-requested-by">{r}</dd> })}
                {policy_facts(&approval)}
                <dt>"Asked"</dt><dd><time datetime=approval.created_at.clone()>{short_time(&approval.created_at)}</time></dd>
            </dl>
            {crate::components::diff_view::change_of(&approval.tool_name, &approval.tool_args).map(|d| view! {
                <h3 class="label">"The change"</h3>
                <div class="approval-diff"><crate::components::diff_view::DiffView diff=d/></div>
            })}
            <h3 class="label">"Arguments"</h3>
            <div class="approval-args" data-args=approval.tool_args.to_string()><ArgsView args=approval.tool_args.clone()/></div>
            <Transition fallback=|| ()>
                {reloading(move || {
                    let approval = for_actions.clone();
                    let reason_id = reason_id.clone();
                    let (reason, busy, reason_value) = (reason.clone(), busy.clone(), reason_value.clone());
                    let editing = editing.clone();
                    let here = here.clone();
                    Suspend::new(async move {
                        let viewer = crate::components::viewer::current().await;
                        // Either, not AnyView: an AnyView keeps code for every
                        // way a view can render alive, wanted or not (the
                        // WebAssembly's size).
                        match viewer.refusal(&approval) {
                            Some(why) => leptos::either::Either::Left(view! {
                                <p class="decide-refused" role="note">{why}</p>
                            }),
                            None => {
                                let (set_reason, busy2, reason_value2) = (reason.clone(), busy.clone(), reason_value.clone());
                                let token = viewer.form_token.clone();
                                let action = format!("/ui/approvals/{}/decide", approval.uuid);
                                leptos::either::Either::Right(view! {
                                <form class="decide-form" method="post" action=action>
                                    <input type="hidden" name="form_token" value=token.clone().unwrap_or_default()/>
                                    <input type="hidden" name="back" value=here.clone()/>
                                    {implicit_submit_guard()}
                                    <label class="reason" for=reason_id.clone()>"Reason (optional, told to the agent if you reject)"</label>
                                    <input type="text" id=reason_id name="reason" prop:value=reason on:input=move |ev| set_reason.set(event_target_value(&ev))/>
                                    <div class="approval-actions">
                                        // Plain submit buttons: before hydration (or with
                                        // JavaScript off) the browser posts the form; once
                                        // hydrated the click decides over the JSON API.
                                        <button type="submit" name="decision" value="approve" class="btn btn-approve" disabled=move || busy.get()
                                            on:click=move |ev| { ev.prevent_default(); on_decide.run((true, reason_value())) }>
                                            <span aria-hidden="true">"✓ "</span>"Approve"
                                        </button>
                                        <button type="submit" name="decision" value="reject" class="btn btn-reject" disabled=move || busy2.get()
                                            on:click=move |ev| { ev.prevent_default(); on_decide.run((false, reason_value2())) }>
                                            <span aria-hidden="true">"✕ "</span>"Reject"
                                        </button>
                                        {edit_button(&approval, on_edited, editing.clone())}
                                    </div>
                                </form>
                                {grant_form(&approval, token.clone().unwrap_or_default(), here.clone())}
                                {edit_opener(&approval, on_edited, &here)}
                                {edit_form(&approval, on_edited, editing.clone(), here.clone(), token)}
                            })},
                        }
                    })
                })}
            </Transition>
        </section>
    }
}

/// The first submit button of a decision form (an `<input>`, so it is no
/// `button` to a selector): disabled and hidden, so
/// pressing Enter in the reason field submits nothing (the browser's
/// implicit submission uses the first submit button, and does nothing when
/// it is disabled) instead of approving.
pub fn implicit_submit_guard() -> impl IntoView {
    view! { <input type="submit" class="implicit-submit-guard" value="" disabled=true hidden=true aria-hidden="true" tabindex="-1"/> }
}

/// This page's path and query (`/ui/approvals?cursor=…`), to come back to
/// after a form posted without JavaScript. Call it in a component's body.
pub fn here() -> String {
    let location = leptos_router::hooks::use_location();
    let search = location.search.get_untracked();
    let path = location.pathname.get_untracked();
    if search.is_empty() {
        path
    } else {
        format!("{path}?{search}")
    }
}

/// What asked for an approval, in words: a rule's name as written, or what
/// the fallback means.
pub fn rule_label(rule: &str) -> String {
    match rule {
        "annotation" => "the tool's destructiveHint (no rule matched)".into(),
        "unannotated" => "unannotated tool (unannotated_tools: approve)".into(),
        "proxy" => "asked by the sub-agent (its own rules)".into(),
        r => r.to_string(),
    }
}

/// "1 of 2 approvals from distinct approvers" (a quorum needs sign-in:
/// in auth mode none it is a startup error).
pub fn quorum_text(a: &crate::models::PendingApproval) -> String {
    format!(
        "{} of {} approvals{}",
        a.approvals(),
        a.needed(),
        if a.votes.is_empty() {
            ""
        } else {
            " from distinct approvers"
        }
    )
}

/// The rule facts of a card (which rule asked, who may decide, the
/// quorum's votes).
fn policy_facts(approval: &crate::models::PendingApproval) -> impl IntoView + use<> {
    let approval = approval.clone();
    view! {
                {approval.rule.clone().map(|r| view! { <dt>"Rule"</dt><dd class="approval-rule">{crate::components::approval_card::rule_label(&r)}</dd> })}
        {approval.expires_at.clone().map(|at| view! {
            <dt>"Expires"</dt>
            <dd class="approval-expires" data-escalated=approval.escalated.to_string()>
                <time datetime=at.clone()>{short_time(&at)}</time>
                {approval.escalated.then_some(" (escalated once; it expires for good then)")}
            </dd>
        })}
        {(!approval.approvers.is_empty()).then(|| view! { <dt>"May decide"</dt><dd class="approval-approvers">{approval.approvers.join(", ")}</dd> })}
        {(approval.needed() > 1).then(|| view! {
            <dt>"Approvals"</dt>
            <dd class="approval-quorum" data-approvals=approval.approvals() data-quorum=approval.needed()>
                {quorum_text(&approval)}
                <ul class="approval-votes">
                    {approval.votes.iter().map(|v| view! {
                        <li>{format!("{} {} ", v.by, if v.approve { "approved" } else { "rejected" })}<time datetime=v.at.clone()>{short_time(&v.at)}</time></li>
                    }).collect_view()}
                </ul>
            </dd>
        })}
    }
}

/// Whether the card offers "Edit arguments": the page can take the edited
/// conversation, and the approval needs one approver (with a quorum each
/// vote would approve something else).
fn can_edit(
    approval: &crate::models::PendingApproval,
    on_edited: Option<Callback<crate::models::Conversation>>,
) -> bool {
    on_edited.is_some() && approval.needed() <= 1
}

/// "Edit arguments", where an edit is possible. It submits the card's
/// [`edit_opener`] (a plain GET of this page with `?edit=<uuid>`, which
/// renders the form open) until the page is hydrated; then it toggles the
/// form in place.
fn edit_button(
    approval: &crate::models::PendingApproval,
    on_edited: Option<Callback<crate::models::Conversation>>,
    editing: ArcRwSignal<bool>,
) -> Option<impl IntoView + use<>> {
    can_edit(approval, on_edited).then(|| {
        let shown = editing.clone();
        let opener = format!("edit-open-{}", approval.uuid);
        view! {
            <button type="submit" form=opener class="btn btn-edit" aria-expanded=move || shown.get().to_string()
                on:click=move |ev| { ev.prevent_default(); editing.update(|e| *e = !*e) }>
                "Edit arguments"
            </button>
        }
    })
}

/// "Approve and allow again…" (REACH.md §3): approve, and let later calls
/// of this tool whose checked arguments repeat run without asking, in this
/// conversation or (admins) every one, for a while. A plain form post in a
/// `<details>`, so it works with and without JavaScript and costs the
/// WebAssembly nothing to run. Not offered where no grant can be made (a
/// quorum, a sub-agent's approval, a changed tool).
fn grant_form(
    approval: &PendingApproval,
    token: String,
    back: String,
) -> Option<impl IntoView + use<>> {
    let grantable = approval.quorum.max(1) <= 1
        && approval.remote_task_id.is_none()
        && approval.rule.as_deref() != Some("tool-changed");
    if !grantable {
        return None;
    }
    let args: Vec<String> = approval
        .tool_args
        .as_object()
        .map(|m| m.keys().cloned().collect())
        .unwrap_or_default();
    let offered = args.len().to_string();
    let action = format!("/ui/approvals/{}/decide", approval.uuid);
    Some(view! {
        <details class="grant-form">
            <summary class="btn">"Approve and allow again…"</summary>
            <form method="post" action=action>
                <input type="hidden" name="form_token" value=token/>
                <input type="hidden" name="back" value=back/>
                <input type="hidden" name="decision" value="approve"/>
                <input type="hidden" name="grant" value="1"/>
                <input type="hidden" name="grant_offered" value=offered/>
                <fieldset>
                    <legend>"Later calls run without asking when these arguments repeat"</legend>
                    {args.into_iter().map(|a| {
                        let pointer = format!("/{}", a.replace('~', "~0").replace('/', "~1"));
                        view! { <label><input type="checkbox" name="grant_match" value=pointer checked=true/>" " <code>{a}</code></label> }
                    }).collect_view()}
                </fieldset>
                <label>"For "
                    <select name="grant_for">
                        <option value="15m">"15 minutes"</option>
                        <option value="1h" selected=true>"1 hour"</option>
                        <option value="4h">"4 hours"</option>
                        <option value="8h">"8 hours"</option>
                        <option value="24h">"24 hours"</option>
                    </select>
                </label>
                <label>" in "
                    <select name="grant_scope">
                        <option value="conversation" selected=true>"this conversation"</option>
                        <option value="agent">"every conversation (admins)"</option>
                    </select>
                </label>
                <button type="submit" class="btn btn-approve">"Approve and allow again"</button>
            </form>
        </details>
    })
}

/// The GET form "Edit arguments" submits without JavaScript.
fn edit_opener(
    approval: &crate::models::PendingApproval,
    on_edited: Option<Callback<crate::models::Conversation>>,
    here: &str,
) -> Option<impl IntoView + use<>> {
    can_edit(approval, on_edited).then(|| {
        view! {
            <form id=format!("edit-open-{}", approval.uuid) method="get" action=crate::components::edit_form::without_query(here) hidden=true>
                <input type="hidden" name="edit" value=approval.uuid.clone()/>
            </form>
        }
    })
}

/// The edit form while "Edit arguments" is open.
fn edit_form(
    approval: &crate::models::PendingApproval,
    on_edited: Option<Callback<crate::models::Conversation>>,
    editing: ArcRwSignal<bool>,
    back: String,
    form_token: Option<String>,
) -> Option<impl IntoView + use<>> {
    let done = on_edited.filter(|_| can_edit(approval, on_edited))?;
    let approval = approval.clone();
    let close = editing.clone();
    Some(move || {
        editing.get().then(|| {
            let close = close.clone();
            view! {
                <crate::components::edit_form::EditForm approval=approval.clone() on_done=done
                    on_cancel=Callback::new(move |_| close.set(false))
                    back=back.clone() form_token=form_token.clone()/>
            }
        })
    })
}
