//! `/ui/conversations/:id`: one conversation and its messages.

use crate::api;
use crate::components::status_badge::StatusBadge;
use crate::models::{Conversation, Message, Role};
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
                    Ok(c) => view! { <ConversationView c=c/> }.into_any(),
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

/// Header and timeline of a loaded conversation.
#[component]
fn ConversationView(c: Conversation) -> impl IntoView {
    let empty = c.messages.is_empty();
    view! {
        <section class="conversation" data-conversation-id=c.id.clone()>
            <header class="conversation-head">
                <h1>"Conversation"</h1>
                <StatusBadge status=c.status/>
                <dl class="facts">
                    <dt>"ID"</dt><dd><code>{c.id.clone()}</code></dd>
                    <dt>"Session"</dt><dd><code>{c.session_id.clone()}</code></dd>
                    <dt>"Started"</dt><dd><time datetime=c.created_at.clone()>{short_time(&c.created_at)}</time></dd>
                </dl>
            </header>
            {if empty {
                view! { <p class="panel empty" id="no-messages">"No messages yet."</p> }.into_any()
            } else {
                view! {
                    <ol class="timeline" id="messages">
                        {c.messages.into_iter().map(|m| view! { <MessageItem m=m/> }).collect_view()}
                    </ol>
                }.into_any()
            }}
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
        view! {
            <div class="tool-call">
                <p class="tool-name"><code>{t.name}</code></p>
                <pre class="tool-args">{args}</pre>
                {t.result.map(|r| view! { <pre class="tool-result" class:error=t.is_error.unwrap_or(false)>{r}</pre> })}
            </div>
        }
    });
    view! {
        <li class=format!("message message-{}", m.role.as_str()) data-message-id=m.id.clone()>
            <p class="message-meta">
                <span class="message-role">{who}</span>
                <time datetime=m.created_at.clone() class="muted">{short_time(&m.created_at)}</time>
            </p>
            <div class="message-content">{m.content}</div>
            {tool}
        </li>
    }
}
