//! `/ui/conversations/:id`: one conversation: its timeline, the approval
//! card while it waits, and a composer.

use crate::api::{self, ApiError};
use crate::components::approval_card::ApprovalCard;
use crate::components::status_badge::StatusBadge;
use crate::models::{Conversation, ConversationStatus, Message, Role};
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
    let busy = Signal::derive(move || send.pending().get() || decide.pending().get());
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
            {move || {
                let messages = conv.with(|c| c.messages.clone());
                if messages.is_empty() {
                    view! { <p class="panel empty" id="no-messages">"No messages yet."</p> }.into_any()
                } else {
                    view! {
                        <ol class="timeline" id="messages">
                            {messages.into_iter().map(|m| view! { <MessageItem m=m/> }).collect_view()}
                        </ol>
                    }.into_any()
                }
            }}
            {move || conv.with(|c| c.pending_approval.clone()).map(|a| view! {
                <ApprovalCard approval=a busy=busy on_decide=on_decide/>
            })}
            {move || error.get().map(|e| view! { <p class="alert alert-error" role="alert" id="turn-error">{e}</p> })}
            {move || busy.get().then(|| view! { <p class="progress" role="status">"The agent is working…"</p> })}
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
        let args = serde_json::to_string_pretty(&t.arguments).unwrap_or_default();
        let state = match (&t.result, t.is_error) {
            (None, _) => "pending",
            (Some(_), Some(true)) => "error",
            (Some(_), _) => "ok",
        };
        view! {
            <details class=format!("tool-call tool-{state}") open=state != "ok">
                <summary>
                    <code class="tool-name">{t.name.clone()}</code>
                    {t.server.clone().map(|s| view! { <span class="muted">" on " {s}</span> })}
                    <span class="tool-state">{match state { "pending" => " · waiting", "error" => " · error", _ => " · done" }}</span>
                </summary>
                <pre class="tool-args">{args}</pre>
                {t.result.map(|r| view! { <pre class="tool-result" class:error=t.is_error.unwrap_or(false)>{r}</pre> })}
            </details>
        }
    });
    view! {
        <li class=format!("message message-{}", m.role.as_str()) data-message-id=m.id.clone()>
            <p class="message-meta">
                <span class="message-role">{who}</span>
                <time datetime=m.created_at.clone() class="muted">{short_time(&m.created_at)}</time>
            </p>
            {(!m.content.is_empty()).then(|| view! { <div class="message-content">{m.content.clone()}</div> })}
            {tool}
        </li>
    }
}
