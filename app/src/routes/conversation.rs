//! `/ui/conversations/:id`: one conversation: its timeline, the approval
//! card while it waits, and a composer.

use crate::api::{self, ApiError};
use crate::components::approval_card::ApprovalCard;
use crate::components::args_view::ArgsView;
use crate::components::pipeline_tree::PipelineTree;
use crate::components::status_badge::StatusBadge;
use crate::models::{
    ApprovalOutcome, ApprovalStatus, Conversation, ConversationStatus, Event, EventKind, Message,
    Role,
};
use crate::pipeline::PipelineState;
use crate::routes::home::short_time;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

/// The conversation page.
#[component]
pub fn ConversationPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    let conversation = Resource::new(id, api::get_conversation);

    view! {
        <p class="crumbs"><a href="/">"← All conversations"</a></p>
        <Transition fallback=|| view! { <p class="muted">"Loading the conversation…"</p> }>
            {move || Suspend::new(async move {
                match conversation.await {
                    Ok(c) => view! { <ConversationView initial=c/> }.into_any(),
                    Err(e) if e.status == 404 => view! {
                        <section class="panel empty" role="alert">
                            <h1>"Conversation not found"</h1>
                            <p>"It may have been deleted, or the link is wrong. " <a href="/">"See all conversations"</a></p>
                        </section>
                    }.into_any(),
                    Err(e) => view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the conversation: " {e.to_string()}</p>
                        </div>
                    }.into_any(),
                }
            })}
        </Transition>
    }
}

/// After a failed action, the conversation may still have changed (an
/// error recorded, a decision made elsewhere): read it again.
async fn with_refresh<F>(id: String, action: F) -> (Option<Conversation>, Option<ApiError>)
where
    F: std::future::Future<Output = Result<crate::models::ConversationResponse, ApiError>>,
{
    match action.await {
        Ok(r) => (Some(r.conversation), None),
        Err(e) => (api::get_conversation(id).await.ok(), Some(e)),
    }
}

/// The live view of a loaded conversation.
#[component]
fn ConversationView(initial: Conversation) -> impl IntoView {
    let conv = RwSignal::new(initial);
    let (error, set_error) = signal(None::<String>);
    let (draft, set_draft) = signal(String::new());

    let send = Action::new(move |text: &String| {
        let id = conv.get_untracked().id;
        let text = text.clone();
        with_refresh(id.clone(), api::send_message(id, text))
    });
    let decide = Action::new(
        move |(uuid, approved, reason): &(String, bool, Option<String>)| {
            let id = conv.get_untracked().id;
            with_refresh(id, api::decide(uuid.clone(), *approved, reason.clone()))
        },
    );
    for action in [send.value(), decide.value()] {
        Effect::new(move |_| {
            if let Some((fresh, err)) = action.get() {
                if let Some(c) = fresh {
                    conv.set(c);
                }
                set_error.set(err.map(|e| e.message));
            }
        });
    }
    // Live: reload on every event of this conversation (another tab, the
    // REST API, the turn's own progress); remember the latest step.
    let live = crate::live::use_live();
    let progress = RwSignal::new(None::<String>);
    let reload = Action::new(move |_: &()| {
        let id = conv.get_untracked().id;
        async move { api::get_conversation(id).await.ok() }
    });
    Effect::new(move |_| {
        if let Some(Some(c)) = reload.value().get() {
            conv.set(c);
        }
    });
    // Several events of one step arrive together: reload once for them.
    let reload_pending = StoredValue::new(false);
    let consumed = StoredValue::new(live.seq.get_untracked());
    Effect::new(move |_| {
        let now = live.seq.get();
        let events = live.since(consumed.get_value());
        consumed.set_value(now);
        let id = conv.with_untracked(|c| c.id.clone());
        let mut changed = false;
        for (_, e) in events {
            if e.conversation_id == id {
                progress.set(progress_text(&e));
                changed = true;
            } else if e.kind == EventKind::Resync {
                changed = true;
            }
        }
        if changed && !reload_pending.get_value() {
            reload_pending.set_value(true);
            set_timeout(
                move || {
                    reload_pending.set_value(false);
                    reload.dispatch(());
                },
                crate::live::DEBOUNCE,
            );
        }
    });
    // After a reconnect, catch up even if no event names this conversation.
    Effect::new(move |prev: Option<bool>| {
        let up = live.connected.get();
        if prev == Some(false) && up {
            reload.dispatch(());
        }
        up
    });
    // The card is rebuilt only when the approval itself changes, not on
    // every reload of the conversation: a reason being typed and the focus
    // survive live updates.
    let pending = Memo::new(move |_| conv.with(|c| c.pending_approval.clone()));
    let busy = Signal::derive(move || send.pending().get() || decide.pending().get());
    let working = Signal::derive(move || busy.get() || progress.with(Option::is_some));
    let waiting = move || conv.with(|c| c.status == ConversationStatus::WaitingApproval);
    let submit = move || {
        let text = draft.get_untracked();
        if text.trim().is_empty() || busy.get_untracked() || waiting() {
            return;
        }
        set_draft.set(String::new());
        set_error.set(None);
        send.dispatch(text);
    };
    let on_decide = Callback::new(move |(approved, reason): (bool, Option<String>)| {
        if let Some(a) = conv.with_untracked(|c| c.pending_approval.clone()) {
            set_error.set(None);
            decide.dispatch((a.uuid, approved, reason));
        }
    });

    view! {
        <section class="conversation" data-conversation-id=move || conv.with(|c| c.id.clone())>
            <header class="conversation-head">
                <h1>"Conversation"</h1>
                {move || view! { <StatusBadge status=conv.with(|c| c.status)/> }}
                <dl class="facts">
                    <dt>"ID"</dt><dd><code>{move || conv.with(|c| c.id.clone())}</code></dd>
                    <dt>"Session"</dt><dd><code>{move || conv.with(|c| c.session_id.clone())}</code></dd>
                    <dt>"Started"</dt><dd>{move || conv.with(|c| short_time(&c.created_at))}</dd>
                </dl>
            </header>
            <PipelinePanel conv=conv/>
            {move || conv.with(|c| c.messages.is_empty()).then(|| view! {
                <p class="panel empty" id="no-messages">"No messages yet."</p>
            })}
            // Keyed: a live reload re-renders only the messages that changed,
            // so an expanded tool card stays expanded.
            <ol class="timeline" id="messages">
                <For each=move || conv.with(|c| c.messages.clone()) key=message_key let:m>
                    <MessageItem m=m/>
                </For>
            </ol>
            {move || pending.get().map(|a| view! {
                <ApprovalCard approval=a busy=busy on_decide=on_decide autofocus=true/>
            })}
            {move || error.get().map(|e| view! { <p class="alert alert-error" role="alert" id="turn-error">{e}</p> })}
            <p class="progress" role="status" id="progress" aria-live="polite">
                {move || working.get().then(|| view! {
                    <span class="spinner" aria-hidden="true"></span>
                    {progress.get().unwrap_or_else(|| "The agent is working…".to_string())}
                })}
            </p>
            <form class="composer" on:submit=move |ev| { ev.prevent_default(); submit(); }>
                <label for="composer-input" class="visually-hidden">"Message"</label>
                <textarea
                    id="composer-input"
                    rows="2"
                    placeholder=move || if waiting() { "Decide on the approval above first" } else { "Message the agent (Enter to send, Shift+Enter for a new line)" }
                    prop:value=draft
                    disabled=move || busy.get() || waiting()
                    on:input=move |ev| set_draft.set(event_target_value(&ev))
                    on:keydown=move |ev| {
                        if ev.key() == "Enter" && !ev.shift_key() {
                            ev.prevent_default();
                            submit();
                        }
                    }
                ></textarea>
                <button type="submit" class="btn btn-primary" disabled=move || busy.get() || waiting()>"Send"</button>
            </form>
        </section>
    }
}

/// One message bubble. Content is rendered as text, never as HTML.
#[component]
fn MessageItem(m: Message) -> impl IntoView {
    let who = match m.role {
        Role::User => "You",
        Role::Assistant => "Agent",
        Role::Tool => "Tool",
        Role::System => "System",
    };
    let tool = m.tool_call.clone().map(|t| {
        let state = match (&t.result, t.is_error) {
            (None, _) => "pending",
            (Some(_), Some(true)) => "error",
            (Some(_), _) => "ok",
        };
        let state_text = match state {
            "pending" => "waiting",
            "error" => "error",
            _ => "done",
        };
        let duration = t.duration_ms.map(|ms| {
            if ms < 1000 {
                format!("{ms} ms")
            } else {
                format!("{:.1} s", ms as f64 / 1000.0)
            }
        });
        view! {
            <details class=format!("tool-call tool-{state}") open=state != "ok">
                <summary>
                    <code class="tool-name">{t.name.clone()}</code>
                    {t.server.clone().map(|s| view! { <span class="muted tool-server">" on " {s}</span> })}
                    <span class="tool-state">" · " {state_text}</span>
                    {duration.map(|d| view! { <span class="muted tool-duration">" · " {d}</span> })}
                </summary>
                <h4 class="label">"Arguments"</h4>
                <div class="tool-args" data-args=t.arguments.to_string()><ArgsView args=t.arguments.clone()/></div>
                {t.approval.clone().map(|a| view! { <ApprovalOutcomeLine a=a/> })}
                {t.result.map(|r| view! {
                    <h4 class="label">{if t.is_error.unwrap_or(false) { "Error" } else { "Result" }}</h4>
                    <pre class="tool-result" class:error=t.is_error.unwrap_or(false)>{r}</pre>
                })}
            </details>
        }
        .into_any()
    });
    let html = (!m.content.is_empty() && matches!(m.role, Role::Assistant | Role::User))
        .then(|| crate::markdown::to_safe_html(&m.content));
    // A pipeline node's start and finish notes are dividers, not bubbles.
    let note = m.role == Role::System && m.node.is_some();
    let class = if note {
        "message message-node-note".to_string()
    } else {
        format!("message message-{}", m.role.as_str())
    };
    view! {
        <li class=class data-message-id=m.id.clone() data-node=m.node.clone()>
            <p class="message-meta">
                <span class="message-role">{who}</span>
                {m.node.clone().map(|n| view! { <span class="node-tag" title="Pipeline node">{n}</span> })}
                <time datetime=m.created_at.clone() class="muted">{short_time(&m.created_at)}</time>
            </p>
            {match html {
                Some(h) => view! { <div class="message-content markdown" inner_html=h></div> }.into_any(),
                None => (!m.content.is_empty()).then(|| view! { <div class="message-content">{m.content.clone()}</div> }).into_any(),
            }}
            {tool}
        </li>
    }
}

/// The pipeline tree with this conversation's run, when it has one.
#[component]
fn PipelinePanel(conv: RwSignal<Conversation>) -> impl IntoView {
    let run =
        Signal::derive(move || conv.with(|c| PipelineState::parse(c.pipeline_state.as_ref())));
    let has_run = move || run.with(Option::is_some);
    let tree = Resource::new(|| (), |_| api::get_pipeline());
    view! {
        <Show when=has_run>
            <Transition fallback=|| ()>
                {move || Suspend::new(async move {
                    tree.await.ok().and_then(|v| v.pipeline).map(|root| view! {
                        <details class="panel pipeline-panel" open>
                            <summary>
                                "Pipeline run · "
                                <span class="run-status">{move || run.with(|r| r.as_ref().map(|r| r.status.as_str()).unwrap_or(""))}</span>
                            </summary>
                            <PipelineTree root=root run=run/>
                        </details>
                    })
                })}
            </Transition>
        </Show>
    }
}

/// What the progress line says for an event; `None` when the turn is over.
fn progress_text(e: &Event) -> Option<String> {
    if e.running == Some(false) {
        return None;
    }
    match e.kind {
        EventKind::ModelCalled => Some(match &e.node {
            Some(n) => format!(
                "Asking the model for {n} ({})…",
                e.detail.clone().unwrap_or_default()
            ),
            None => format!(
                "Asking the model ({})…",
                e.detail.clone().unwrap_or_default()
            ),
        }),
        EventKind::ToolCallStarted => Some(format!(
            "Running {}…",
            e.tool.clone().unwrap_or_else(|| "a tool".into())
        )),
        EventKind::ToolCallFinished => Some(format!(
            "{} finished; the model goes on…",
            e.tool.clone().unwrap_or_else(|| "The tool".into())
        )),
        EventKind::ApprovalDecided => Some("Decision recorded; the agent goes on…".into()),
        EventKind::NodeStarted => Some(format!(
            "Running node {}{}…",
            e.node.clone().unwrap_or_default(),
            e.detail
                .as_ref()
                .map(|d| format!(" ({d})"))
                .unwrap_or_default()
        )),
        EventKind::NodeFinished => Some(format!(
            "Node {} {}; the pipeline goes on…",
            e.node.clone().unwrap_or_default(),
            e.detail.clone().unwrap_or_else(|| "finished".into())
        )),
        EventKind::MessageAdded | EventKind::StatusChanged if e.running == Some(true) => {
            Some("The agent is working…".into())
        }
        _ => None,
    }
}

/// The outcome of a call's approval: the state in words (never colour
/// alone), who decided and when, and the reason given.
#[component]
fn ApprovalOutcomeLine(a: ApprovalOutcome) -> impl IntoView {
    let (icon, words) = match a.status {
        ApprovalStatus::Pending => ("…", "Waiting for approval"),
        ApprovalStatus::Approved | ApprovalStatus::Executing => ("✓", "Approved, running"),
        ApprovalStatus::Executed => ("✓", "Approved and run"),
        ApprovalStatus::Failed => ("✓", "Approved; the tool failed"),
        ApprovalStatus::Rejected => ("✕", "Rejected"),
        ApprovalStatus::InDoubt => ("?", "In doubt: the agent stopped while it ran; not re-run"),
        ApprovalStatus::Cancelled => ("✕", "Cancelled"),
    };
    view! {
        <p class=format!("approval-outcome outcome-{}", a.status.as_str()) data-status=a.status.as_str()>
            <span aria-hidden="true">{icon} " "</span>
            <strong>{words}</strong>
            {a.decided_by.clone().map(|by| view! { " by " <span class="decided-by">{by}</span> })}
            {a.decided_via.clone().map(|via| view! { " via " <span class="decided-via">{via}</span> })}
            {a.decided_at.clone().map(|at| view! { " at " <time datetime=at.clone()>{short_time(&at)}</time> })}
            {a.reason.clone().map(|r| view! { <span class="outcome-reason">" · reason: " {r}</span> })}
        </p>
    }
}

/// What makes a message's rendering change: its id, and for a tool call
/// whether it has a result and where its approval stands.
fn message_key(m: &Message) -> (String, Option<(bool, Option<ApprovalStatus>)>) {
    (
        m.id.clone(),
        m.tool_call
            .as_ref()
            .map(|t| (t.result.is_some(), t.approval.as_ref().map(|a| a.status))),
    )
}
