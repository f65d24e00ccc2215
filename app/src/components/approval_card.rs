//! The approval card: what will run, with which arguments, on which server
//! or agent, who asked (the chain for a proxy approval), and the Approve /
//! Reject buttons. It takes the keyboard focus when it appears, so a
//! keyboard or screen-reader user lands on the decision. A viewer who may
//! not decide (no approver role, or their own request under separation of
//! duties) sees why instead of the buttons.

use crate::components::args_view::ArgsView;
use crate::models::PendingApproval;
use crate::reloading::reloading;
use crate::routes::home::short_time;
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
    let editing = ArcRwSignal::new(false);
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
            <p class="approval-description">{approval.description.clone()}</p>
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
            }.into_any())}
            <h3 class="label">"Arguments"</h3>
            <div class="approval-args" data-args=approval.tool_args.to_string()><ArgsView args=approval.tool_args.clone()/></div>
            <Transition fallback=|| ()>
                {reloading(move || {
                    let approval = for_actions.clone();
                    let reason_id = reason_id.clone();
                    let (reason, busy, reason_value) = (reason.clone(), busy.clone(), reason_value.clone());
                    let editing = editing.clone();
                    Suspend::new(async move {
                        let viewer = crate::components::viewer::current().await;
                        match viewer.refusal(&approval) {
                            Some(why) => view! {
                                <p class="decide-refused" role="note">{why}</p>
                            }.into_any(),
                            None => {
                                let (set_reason, busy2, reason_value2) = (reason.clone(), busy.clone(), reason_value.clone());
                                view! {
                                <label class="reason" for=reason_id.clone()>"Reason (optional, told to the agent if you reject)"</label>
                                <input type="text" id=reason_id prop:value=reason on:input=move |ev| set_reason.set(event_target_value(&ev))/>
                                <div class="approval-actions">
                                    <button type="button" class="btn btn-approve" disabled=move || busy.get()
                                        on:click=move |_| on_decide.run((true, reason_value()))>
                                        <span aria-hidden="true">"✓ "</span>"Approve"
                                    </button>
                                    <button type="button" class="btn btn-reject" disabled=move || busy2.get()
                                        on:click=move |_| on_decide.run((false, reason_value2()))>
                                        <span aria-hidden="true">"✕ "</span>"Reject"
                                    </button>
                                    {edit_button(&approval, on_edited, editing.clone())}
                                </div>
                                {edit_form(&approval, on_edited, editing.clone())}
                            }.into_any()},
                        }
                    })
                })}
            </Transition>
        </section>
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

/// "1 of 2 approvals" (and, in auth mode none, what is counted).
pub fn quorum_text(a: &crate::models::PendingApproval) -> String {
    let by_session = a.votes.iter().any(|v| v.by.starts_with("session:"));
    format!(
        "{} of {} approvals{}",
        a.approvals(),
        a.needed(),
        if by_session {
            " (no sign-in: each browser session counts as one approver)"
        } else if a.votes.is_empty() {
            ""
        } else {
            " from distinct approvers"
        }
    )
}

/// The rule facts of a card (which rule asked, who may decide, the
/// quorum's votes), type-erased so the card's view type stays shallow.
fn policy_facts(approval: &crate::models::PendingApproval) -> AnyView {
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
    .into_any()
}

/// "Edit arguments", where an edit is possible: the card offers it, and
/// the approval needs one approver (with a quorum each vote would approve
/// something else).
fn edit_button(
    approval: &crate::models::PendingApproval,
    on_edited: Option<Callback<crate::models::Conversation>>,
    editing: ArcRwSignal<bool>,
) -> Option<AnyView> {
    (on_edited.is_some() && approval.needed() <= 1).then(|| {
        let shown = editing.clone();
        view! {
            <button type="button" class="btn btn-edit" aria-expanded=move || shown.get().to_string()
                on:click=move |_| editing.update(|e| *e = !*e)>
                "Edit arguments"
            </button>
        }
        .into_any()
    })
}

/// The edit form while "Edit arguments" is open.
fn edit_form(
    approval: &crate::models::PendingApproval,
    on_edited: Option<Callback<crate::models::Conversation>>,
    editing: ArcRwSignal<bool>,
) -> AnyView {
    let Some(done) = on_edited else {
        return ().into_any();
    };
    let approval = approval.clone();
    let close = editing.clone();
    (move || {
        editing.get().then(|| {
            let close = close.clone();
            view! {
                <crate::components::edit_form::EditForm approval=approval.clone() on_done=done
                    on_cancel=Callback::new(move |_| close.set(false))/>
            }
        })
    })
    .into_any()
}
