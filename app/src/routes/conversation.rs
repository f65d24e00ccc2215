//! `/ui/conversations/:id`: one conversation: its timeline, the approval
//! card while it waits, and a composer.

use crate::api::{self, ApiError};
use crate::components::approval_card::ApprovalCard;
use crate::components::args_view::ArgsView;
use crate::components::pipeline_tree::PipelineTree;
use crate::components::question_card::QuestionCard;
use crate::components::status_badge::StatusBadge;
use crate::components::time::short_time;
use crate::models::{
    ApprovalOutcome, ApprovalStatus, Conversation, ConversationStatus, Event, EventKind, Message,
    Role,
};
use crate::pipeline::PipelineState;
use crate::reloading::reloading;
use leptos::prelude::*;
use leptos_router::hooks::use_params_map;

/// The conversation page.
#[component]
pub fn ConversationPage() -> impl IntoView {
    let params = use_params_map();
    let id = move || params.read().get("id").unwrap_or_default();
    // Reference-counted: the server's render task may still await it when
    // the browser leaves and the page's owner is disposed.
    let conversation = ArcResource::new(id, api::get_conversation);

    view! {
        <p class="crumbs"><a href="/">"← All conversations"</a></p>
        <Transition fallback=|| view! { <p class="muted">"Loading the conversation…"</p> }>
            {reloading(move || { let conversation = conversation.clone(); Suspend::new(async move {
                use leptos::either::EitherOf3;
                match conversation.await {
                    Ok(c) => EitherOf3::A(view! { <ConversationView initial=c/> }),
                    Err(e) if e.status == 404 => EitherOf3::B(view! {
                        <section class="panel empty" role="alert">
                            <h1>"Conversation not found"</h1>
                            <p>"It may have been deleted, or the link is wrong. " <a href="/">"See all conversations"</a></p>
                        </section>
                    }),
                    Err(e) => EitherOf3::C(view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the conversation: " {e.to_string()}</p>
                        </div>
                    }),
                }
            })})}
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
///
/// Its state is reference-counted (`Arc*` signals and actions), not
/// arena-owned: when a browser leaves while the server renders the page,
/// the page's owner is disposed while the render task may still read the
/// state, and an arena value would panic there.
#[component]
fn ConversationView(initial: Conversation) -> impl IntoView {
    let conv = ArcRwSignal::new(initial);
    let error = ArcRwSignal::new(None::<String>);
    let draft = ArcRwSignal::new(String::new());

    let send = ArcAction::new({
        let conv = conv.clone();
        move |text: &String| {
            let id = conv.get_untracked().id;
            let text = text.clone();
            with_refresh(id.clone(), api::send_message(id, text))
        }
    });
    let decide = ArcAction::new({
        let conv = conv.clone();
        move |(uuid, approved, reason): &(String, bool, Option<String>)| {
            let id = conv.get_untracked().id;
            with_refresh(
                id,
                api::decide(uuid.clone(), *approved, reason.clone(), None),
            )
        }
    });
    for action in [send.value(), decide.value()] {
        let (conv, error) = (conv.clone(), error.clone());
        Effect::new(move |_| {
            if let Some((fresh, err)) = action.get() {
                if let Some(c) = fresh {
                    conv.set(c);
                }
                error.set(err.map(|e| e.message));
            }
        });
    }
    // Live: reload on every event of this conversation (another tab, the
    // REST API, the turn's own progress); remember the latest step.
    let progress = ArcRwSignal::new(None::<String>);
    let reload = ArcAction::new({
        let conv = conv.clone();
        move |_: &()| {
            let id = conv.get_untracked().id;
            async move { api::get_conversation(id).await.ok() }
        }
    });
    {
        let (conv, value) = (conv.clone(), reload.value());
        Effect::new(move |_| {
            if let Some(Some(c)) = value.get() {
                conv.set(c);
            }
        });
    }
    // Effects run in the browser only: the live context is read there.
    {
        let (conv, progress, reload) = (conv.clone(), progress.clone(), reload.clone());
        // Several events of one step arrive together: reload once for them.
        let reload_pending = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let consumed = std::sync::Arc::new(std::sync::atomic::AtomicU64::new(u64::MAX));
        Effect::new(move |_| {
            use std::sync::atomic::Ordering::SeqCst;
            let live = crate::live::use_live();
            let now = live.seq.get();
            if consumed.load(SeqCst) == u64::MAX {
                consumed.store(now, SeqCst);
                return;
            }
            let events = live.since(consumed.swap(now, SeqCst));
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
            if changed && !reload_pending.swap(true, SeqCst) {
                let (pending, reload) = (reload_pending.clone(), reload.clone());
                set_timeout(
                    move || {
                        pending.store(false, SeqCst);
                        reload.dispatch(());
                    },
                    crate::live::DEBOUNCE,
                );
            }
        });
    }
    // After a reconnect, catch up even if no event names this conversation.
    {
        let reload = reload.clone();
        Effect::new(move |prev: Option<bool>| {
            let up = crate::live::use_live().connected.get();
            if prev == Some(false) && up {
                reload.dispatch(());
            }
            up
        });
    }
    // The card is rebuilt only when the approval itself changes, not on
    // every reload of the conversation: a reason being typed and the focus
    // survive live updates.
    let pending = ArcMemo::new({
        let conv = conv.clone();
        move |_| conv.with(|c| c.pending_approval.clone())
    });
    let (send_pending, decide_pending) = (send.pending(), decide.pending());
    let busy = ArcSignal::derive(move || send_pending.get() || decide_pending.get());
    let working = {
        let (busy, progress) = (busy.clone(), progress.clone());
        move || busy.get() || progress.with(Option::is_some)
    };
    let waiting = {
        let conv = conv.clone();
        move || {
            conv.with(|c| {
                matches!(
                    c.status,
                    ConversationStatus::WaitingApproval | ConversationStatus::WaitingInput
                )
            })
        }
    };
    // The question a tool asked, with its form (a plain post: it reloads
    // the page, with JavaScript or without).
    let question = ArcMemo::new({
        let conv = conv.clone();
        move |_| conv.with(|c| c.pending_question.clone())
    });
    let back = crate::components::approval_card::here();
    let question_card = move || {
        question.get().map(|q| {
            let back = back.clone();
            view! {
                <Transition fallback=|| ()>
                    {move || { let (q, back) = (q.clone(), back.clone()); Suspend::new(async move {
                        let viewer = crate::components::viewer::current().await;
                        view! { <QuestionCard question=q viewer=viewer back=back/> }
                    })}}
                </Transition>
            }
        })
    };
    let submit = {
        let (draft, busy, error, waiting) =
            (draft.clone(), busy.clone(), error.clone(), waiting.clone());
        move || {
            let text = draft.get_untracked();
            if text.trim().is_empty() || busy.get_untracked() || waiting() {
                return;
            }
            draft.set(String::new());
            error.set(None);
            send.dispatch(text);
        }
    };
    let on_decide = {
        let (conv, error) = (conv.clone(), error.clone());
        Callback::new(move |(approved, reason): (bool, Option<String>)| {
            if let Some(a) = conv.with_untracked(|c| c.pending_approval.clone()) {
                error.set(None);
                decide.dispatch((a.uuid, approved, reason));
            }
        })
    };
    let on_edited = {
        let (conv, error) = (conv.clone(), error.clone());
        Callback::new(move |fresh: Conversation| {
            error.set(None);
            conv.set(fresh);
        })
    };
    let run = {
        let conv = conv.clone();
        ArcMemo::new(move |_| conv.with(|c| PipelineState::parse(c.pipeline_state.as_ref())))
    };
    let read = |f: fn(&Conversation) -> String| {
        let conv = conv.clone();
        move || conv.with(f)
    };
    let status = {
        let conv = conv.clone();
        move || view! { <StatusBadge status=conv.with(|c| c.status)/> }
    };
    let empty = {
        let conv = conv.clone();
        move || {
            conv.with(|c| c.messages.is_empty()).then(|| {
                view! {
                    <p class="panel empty" id="no-messages">"No messages yet."</p>
                }
            })
        }
    };
    let each = {
        let conv = conv.clone();
        move || conv.with(|c| c.messages.clone())
    };
    let card = {
        let busy = busy.clone();
        move || {
            pending.get().map(|a| view! {
            <ApprovalCard approval=a busy=busy.clone() on_decide=on_decide autofocus=true on_edited=on_edited/>
        })
        }
    };
    let error_line = {
        let error = error.clone();
        move || {
            error.get().map(
                |e| view! { <p class="alert alert-error" role="alert" id="turn-error">{e}</p> },
            )
        }
    };
    let progress_line = move || {
        working().then(|| {
            view! {
                <span class="spinner" aria-hidden="true"></span>
                {progress.get().unwrap_or_else(|| "The agent is working…".to_string())}
            }
        })
    };
    let placeholder = {
        let waiting = waiting.clone();
        move || {
            if waiting() {
                "Decide on the approval or answer the question above first"
            } else {
                "Message the agent (Enter to send, Shift+Enter for a new line)"
            }
        }
    };
    let disabled = {
        let (busy, waiting) = (busy.clone(), waiting.clone());
        move || busy.get() || waiting()
    };
    let on_submit = {
        let submit = submit.clone();
        move |ev: leptos::ev::SubmitEvent| {
            ev.prevent_default();
            submit();
        }
    };
    let on_input = {
        let draft = draft.clone();
        move |ev| draft.set(event_target_value(&ev))
    };
    let on_keydown = move |ev: leptos::ev::KeyboardEvent| {
        if ev.key() == "Enter" && !ev.shift_key() {
            ev.prevent_default();
            submit();
        }
    };

    view! {
        <section class="conversation" data-conversation-id=read(|c| c.id.clone())>
            <header class="conversation-head">
                <h1>"Conversation"</h1>
                {status}
                <dl class="facts">
                    <dt>"ID"</dt><dd><code>{read(|c| c.id.clone())}</code></dd>
                    <dt>"Session"</dt><dd><code>{read(|c| c.session_id.clone())}</code></dd>
                    <dt>"Started"</dt><dd>{read(|c| short_time(&c.created_at))}</dd>
                </dl>
            </header>
            <PipelinePanel run=run/>
            {empty}
            // Keyed: a live reload re-renders only the messages that changed,
            // so an expanded tool card stays expanded.
            <ol class="timeline" id="messages">
                <For each=each key=message_key let:m>
                    <MessageItem m=m/>
                </For>
            </ol>
            {card}
            {question_card}
            {error_line}
            <p class="progress" role="status" id="progress" aria-live="polite">
                {progress_line}
            </p>
            <form class="composer" on:submit=on_submit>
                <label for="composer-input" class="visually-hidden">"Message"</label>
                <textarea
                    id="composer-input"
                    rows="2"
                    placeholder=placeholder
                    prop:value=draft
                    disabled=disabled.clone()
                    on:input=on_input
                    on:keydown=on_keydown
                ></textarea>
                <button type="submit" class="btn btn-primary" disabled=disabled>"Send"</button>
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
                Some(h) => leptos::either::Either::Left(view! { <div class="message-content markdown" inner_html=h></div> }),
                None => leptos::either::Either::Right((!m.content.is_empty()).then(|| view! { <div class="message-content">{m.content.clone()}</div> })),
            }}
            {tool}
        </li>
    }
}

/// The pipeline tree with this conversation's run, when it has one.
#[component]
fn PipelinePanel(run: ArcMemo<Option<PipelineState>>) -> impl IntoView {
    let has_run = {
        let run = run.clone();
        move || run.with(Option::is_some)
    };
    let tree = ArcResource::new(|| (), |_| api::get_pipeline());
    let panel = move || {
        let (tree, run) = (tree.clone(), run.clone());
        Suspend::new(async move {
            tree.await.ok().and_then(|v| v.pipeline).map(|root| {
                let status = {
                    let run = run.clone();
                    move || run.with(|r| r.as_ref().map(|r| r.status.as_str()).unwrap_or(""))
                };
                view! {
                    <details class="panel pipeline-panel" open>
                        <summary>
                            "Pipeline run · "
                            <span class="run-status">{status}</span>
                        </summary>
                        <PipelineTree root=root run=run/>
                    </details>
                }
            })
        })
    };
    view! {
        <Show when=has_run>
            {let panel = panel.clone(); view! { <Transition fallback=|| ()>{panel}</Transition> }}
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
        EventKind::QuestionAnswered => Some("Answer sent; the tool goes on…".into()),
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
        ApprovalStatus::InDoubt => (
            "?",
            "In doubt: the agent stopped while it ran; not re-run until someone who checked says what happened",
        ),
        ApprovalStatus::Cancelled => ("✕", "Cancelled"),
        ApprovalStatus::Expired => ("⌛", "Expired: nobody decided in time; not run"),
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
        {(a.status == ApprovalStatus::InDoubt).then(|| view! {
            <crate::components::resolve_form::ResolveForm uuid=a.uuid.clone()/>
        })}
        {a.edited_arguments.clone().map(|args| {
            let text = args.to_string();
            view! {
                <div class="approval-edited" data-args=text>
                    <p class="label">"Approved with edited arguments (the tool ran with these):"</p>
                    <crate::components::args_view::ArgsView args=args/>
                </div>
            }
        })}
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
