//! The approval card: what will run, with which arguments, who asked, and
//! the Approve / Reject buttons.

use crate::models::PendingApproval;
use crate::routes::home::short_time;
use leptos::prelude::*;

/// A pending approval. `on_decide(approved, reason)` is called on a click;
/// `busy` disables both buttons while a decision is in flight.
#[component]
pub fn ApprovalCard(
    approval: PendingApproval,
    busy: Signal<bool>,
    on_decide: Callback<(bool, Option<String>)>,
) -> impl IntoView {
    let (reason, set_reason) = signal(String::new());
    let args = serde_json::to_string_pretty(&approval.tool_args).unwrap_or_default();
    let chain = approval
        .chain
        .clone()
        .filter(|c| !c.is_empty())
        .map(|c| c.join(" → "));
    let reason_value = move || Some(reason.get()).filter(|r| !r.trim().is_empty());
    view! {
        <section class="approval-card" role="region" aria-labelledby="approval-title" data-approval=approval.uuid.clone()>
            <h2 id="approval-title">"Approval needed"</h2>
            <p class="approval-description">{approval.description.clone()}</p>
            <dl class="facts">
                <dt>"Tool"</dt><dd><code class="approval-tool">{approval.tool_name.clone()}</code></dd>
                {approval.remote_agent_name.clone().map(|a| view! { <dt>"Agent"</dt><dd>{a}</dd> })}
                {chain.map(|c| view! { <dt>"Via"</dt><dd class="approval-chain">{c}</dd> })}
                <dt>"Asked"</dt><dd><time datetime=approval.created_at.clone()>{short_time(&approval.created_at)}</time></dd>
            </dl>
            <p class="muted">"Arguments"</p>
            <pre class="approval-args">{args}</pre>
            <label class="reason">
                "Reason (optional, told to the agent if you reject)"
                <input type="text" prop:value=reason on:input=move |ev| set_reason.set(event_target_value(&ev))/>
            </label>
            <div class="approval-actions">
                <button type="button" class="btn btn-approve" disabled=move || busy.get()
                    on:click=move |_| on_decide.run((true, reason_value()))>
                    "Approve"
                </button>
                <button type="button" class="btn btn-reject" disabled=move || busy.get()
                    on:click=move |_| on_decide.run((false, reason_value()))>
                    "Reject"
                </button>
            </div>
        </section>
    }
}
