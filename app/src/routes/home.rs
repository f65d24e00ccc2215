//! `/`: the conversation list with the summary counts, a status filter,
//! paging, and the "New conversation" button.

use crate::api;
use crate::components::status_badge::StatusBadge;
use crate::components::time::short_time;
use crate::models::{ConversationItem, ConversationList, ConversationStatus, ListQuery, Summary};
use crate::reloading::reloading;
use leptos::prelude::*;
use leptos_router::hooks::{use_navigate, use_query_map};
use serde::{Deserialize, Serialize};

/// Conversations per page.
const PAGE_SIZE: u32 = 25;

/// The home page.
#[component]
pub fn HomePage() -> impl IntoView {
    let query = use_query_map();
    let list_query = move || {
        let q = query.read();
        ListQuery {
            limit: Some(PAGE_SIZE),
            cursor: q.get("cursor"),
            status: q.get("status"),
            q: q.get("q").filter(|s| !s.trim().is_empty()),
            view: None,
        }
    };
    // Reloaded whenever the server publishes an event (live list).
    let live = crate::live::use_live();
    // A browser that goes away mid-render disposes the page's reactive
    // values while the list is being read; reading one after the await
    // would panic on the server. So the resource is reference-counted (not
    // owned by the page) and answers with the query it ran: the list
    // renders from plain values.
    let conversations = ArcResource::new(
        move || (list_query(), live.tick.get()),
        |(q, _)| async move {
            let list = api::list_conversations(q.clone()).await.map(Rows::from);
            (q, list)
        },
    );

    let create = Action::new(|_: &()| api::create_conversation());
    let navigate = use_navigate();
    Effect::new(move |_| {
        if let Some(Ok(c)) = create.value().get() {
            navigate(&format!("/ui/conversations/{}", c.id), Default::default());
        }
    });
    let creating = create.pending();
    let create_error = move || create.value().get().and_then(|r| r.err());

    view! {
        <section class="page-head">
            <h1>"Conversations"</h1>
            <button
                type="button"
                class="btn btn-primary"
                id="new-conversation"
                on:click=move |_| { create.dispatch(()); }
                disabled=move || creating.get()
            >
                {move || if creating.get() { "Creating…" } else { "New conversation" }}
            </button>
        </section>
        {move || create_error().map(|e| view! {
            <p class="alert alert-error" role="alert">"Could not create a conversation: " {e.to_string()}</p>
        })}
        <Transition fallback=|| view! { <p class="muted">"Loading conversations…"</p> }>
            {reloading(move || {
                let conversations = conversations.clone();
                Suspend::new(async move {
                match conversations.await {
                    (q, Ok(list)) => leptos::either::Either::Left(view! { <ListView list=list query=q/> }),
                    (_, Err(e)) => leptos::either::Either::Right(view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the conversations: " {e.to_string()}</p>
                            <a href="/" class="btn">"Retry"</a>
                        </div>
                    }),
                }
            })})}
        </Transition>
    }
}

/// What the page shows of one list page. The server writes the page's data
/// into the HTML once more, as a script the browser hydrates from; whole
/// list items (last message, pending approval with its arguments...) made
/// that script as large as the rows themselves, for five fields a row shows.
#[derive(Clone, Serialize, Deserialize)]
struct Rows {
    rows: Vec<Row>,
    summary: Summary,
    next_cursor: Option<String>,
}

/// One conversation as the list shows it.
#[derive(Clone, Serialize, Deserialize)]
struct Row {
    id: String,
    /// The first user message, on one line and cut to 80 characters.
    title: String,
    status: ConversationStatus,
    message_count: u64,
    created_at: String,
}

impl From<ConversationList> for Rows {
    fn from(list: ConversationList) -> Self {
        Rows {
            rows: list.conversations.into_iter().map(Row::from).collect(),
            summary: list.summary,
            next_cursor: list.next_cursor,
        }
    }
}

impl From<ConversationItem> for Row {
    fn from(c: ConversationItem) -> Self {
        Row {
            title: c
                .title
                .as_deref()
                .map(|t| preview(t, 80))
                .unwrap_or_else(|| "New conversation".to_string()),
            id: c.id,
            status: c.status,
            message_count: c.message_count,
            created_at: c.created_at,
        }
    }
}

/// The summary, the filter, one page of conversations and the pager, for
/// the query that read them.
#[component]
fn ListView(list: Rows, query: ListQuery) -> impl IntoView {
    let current = query.status;
    let search = query.q;
    let s = &list.summary;
    let counts = [
        ("Total", s.total, None),
        ("Active", s.active, Some(ConversationStatus::Active)),
        (
            "Waiting for approval",
            s.waiting_approval,
            Some(ConversationStatus::WaitingApproval),
        ),
        (
            "Completed",
            s.completed,
            Some(ConversationStatus::Completed),
        ),
    ];
    let filter = |status: Option<ConversationStatus>| {
        let selected = current.as_deref() == status.map(|s| s.as_str());
        let q = ListQuery {
            status: status.map(|s| s.as_str().to_string()),
            q: search.clone(),
            ..Default::default()
        };
        (format!("/{}", api::list_query_string(&q)), selected)
    };
    let next_href = list.next_cursor.as_ref().map(|c| {
        let q = ListQuery {
            limit: None,
            cursor: Some(c.clone()),
            status: current.clone(),
            q: search.clone(),
            view: None,
        };
        format!("/{}", api::list_query_string(&q))
    });
    let empty = list.rows.is_empty();
    let searching = search.is_some();

    view! {
        <form method="get" action="/" class="search" role="search">
            <label for="search-input" class="visually-hidden">"Search conversations"</label>
            <input type="search" id="search-input" name="q" placeholder="Search messages…"
                   value=search.clone().unwrap_or_default()/>
            {current.clone().map(|s| view! { <input type="hidden" name="status" value=s/> })}
            <button type="submit" class="btn">"Search"</button>
        </form>
        <nav class="summary" aria-label="Filter by status">
            {counts.into_iter().map(|(label, n, status)| {
                let (href, selected) = filter(status);
                let key = status.map(|s| s.as_str()).unwrap_or("total");
                view! {
                    <a href=href class="summary-item" class:selected=selected
                       aria-current=if selected { Some("page") } else { None }
                       data-count=key>
                        <span class="summary-count">{n}</span>
                        <span class="summary-label">{label}</span>
                    </a>
                }
            }).collect_view()}
        </nav>
        {if empty && searching {
            leptos::either::EitherOf3::A(view! {
                <p class="panel empty" id="no-conversations">"No conversation matches your search."</p>
            })
        } else if empty {
            leptos::either::EitherOf3::B(view! {
                <p class="panel empty" id="no-conversations">
                    "No conversations yet. Start one with " <strong>"New conversation"</strong> "."
                </p>
            })
        } else {
            leptos::either::EitherOf3::C(view! {
                <ul class="conversation-list" id="conversation-list">
                    {list.rows.into_iter().map(|c| view! { <ConversationRow c=c/> }).collect_view()}
                </ul>
            })
        }}
        {next_href.map(|href| view! {
            <p class="pager"><a href=href class="btn" rel="next">"Older conversations →"</a></p>
        })}
    }
}

/// One conversation in the list.
#[component]
fn ConversationRow(c: Row) -> impl IntoView {
    let title = c.title;
    let count = c.message_count;
    let href = format!("/ui/conversations/{}", c.id);
    view! {
        <li class="conversation-row" data-id=c.id.clone()>
            <a href=href class="conversation-link">
                <span class="conversation-title">{title}</span>
                <span class="conversation-meta">
                    <StatusBadge status=c.status/>
                    <span class="muted">{format!("{count} message{}", if count == 1 { "" } else { "s" })}</span>
                    <time datetime=c.created_at.clone() class="muted">{short_time(&c.created_at)}</time>
                </span>
            </a>
        </li>
    }
}

/// The first `max` characters of `s` on one line, with an ellipsis if cut.
pub fn preview(s: &str, max: usize) -> String {
    let one_line = s.split_whitespace().collect::<Vec<_>>().join(" ");
    if one_line.chars().count() <= max {
        one_line
    } else {
        let cut: String = one_line.chars().take(max).collect();
        format!("{cut}…")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn preview_folds_whitespace_and_cuts() {
        assert_eq!(preview("a\n  b", 10), "a b");
        assert_eq!(preview("abcdef", 3), "abc…");
        assert_eq!(preview("ééé", 3), "ééé");
    }
}
