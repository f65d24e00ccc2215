//! `/ui/approvals`: the inbox, "Waiting for you". The questions tools
//! asked (QUESTIONS.md), each with its form, then the approvals waiting for
//! a decision across conversations, oldest first, a page at a time (`?cursor=` for newer
//! ones), with their age, tool, arguments and a link to their
//! conversation; approve or reject right here. Reloaded on every live
//! event, so a decision made elsewhere removes the row at once.

use crate::api::{self, ApiError};
use crate::components::args_view::ArgsView;
use crate::components::question_card::QuestionCard;
use crate::components::time::short_time;
use crate::live::use_live;
use crate::models::{ApprovalQuery, PendingApproval};
use crate::reloading::reloading;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// Approvals per page.
const PAGE_SIZE: u32 = 50;

#[component]
pub fn ApprovalsPage() -> impl IntoView {
    let live = use_live();
    let query = use_query_map();
    // A local bump after our own decision, in case the stream is down.
    let local = RwSignal::new(0u64);
    let approvals = ArcResource::new(
        move || (query.read().get("cursor"), live.tick.get(), local.get()),
        |(cursor, _, _)| async move {
            let first = cursor.is_none();
            let q = ApprovalQuery {
                limit: Some(PAGE_SIZE),
                cursor,
            };
            (first, api::list_approvals(q).await)
        },
    );
    let (outcome, set_outcome) = signal(None::<Result<String, ApiError>>);
    let decide = Action::new(move |(a, approved): &(PendingApproval, bool)| {
        let (a, approved) = (a.clone(), *approved);
        async move {
            let r = api::decide(a.uuid.clone(), approved, None, None).await;
            let verb = if approved { "Approved" } else { "Rejected" };
            set_outcome.set(Some(
                r.map(|_| format!("{verb} {} ({})", a.tool_name, a.uuid)),
            ));
            local.update(|n| *n += 1);
        }
    });
    let busy = decide.pending();
    // Where a decision posted without JavaScript comes back to.
    let back = crate::components::approval_card::here();

    let questions = ArcResource::new(
        move || (live.tick.get(), local.get()),
        |_| async move {
            api::list_questions(ApprovalQuery {
                limit: Some(PAGE_SIZE),
                cursor: None,
            })
            .await
        },
    );
    let back_q = back.clone();
    view! {
        <section class="page-head"><h1>"Waiting for you"</h1></section>
        <Transition fallback=|| ()>
            {reloading(move || { let (questions, back) = (questions.clone(), back_q.clone()); Suspend::new(async move {
                let viewer = crate::components::viewer::current().await;
                match questions.await {
                    Ok(page) if page.total > 0 => leptos::either::EitherOf3::A(view! {
                        <h2 class="inbox-section">"Questions"</h2>
                        <p class="muted">"Tools asking for an answer before they go on, oldest first."</p>
                        <ul class="inbox" id="inbox-questions">
                            {page.questions.into_iter().map(|q| {
                                let conversation = format!("/ui/conversations/{}", q.conversation_id);
                                view! {
                                    <li class="inbox-item inbox-question">
                                        <QuestionCard question=q viewer=viewer.clone() back=back.clone()/>
                                        <div class="approval-actions">
                                            <a class="btn" href=conversation>"Open conversation"</a>
                                        </div>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    }),
                    Ok(_) => leptos::either::EitherOf3::B(()),
                    Err(e) => leptos::either::EitherOf3::C(view! {
                        <p class="alert alert-error" role="alert">"Could not load the questions: " {e.to_string()}</p>
                    }),
                }
            })})}
        </Transition>
        <h2 class="inbox-section">"Approvals"</h2>
        <p class="muted">"Destructive actions waiting for a decision, oldest first."</p>
        {move || outcome.get().map(|o| match o {
            Ok(text) => leptos::either::Either::Left(view! { <p class="alert alert-ok" role="status" id="inbox-outcome">{text}</p> }),
            Err(e) => leptos::either::Either::Right(view! { <p class="alert alert-error" role="alert" id="inbox-outcome">{e.message}</p> }),
        })}
        <Transition fallback=|| view! { <p class="muted">"Loading approvals…"</p> }>
            {reloading(move || { let (approvals, back) = (approvals.clone(), back.clone()); Suspend::new(async move {
                let viewer = crate::components::viewer::current().await;
                let (first, list) = approvals.await;
                let back = back.clone();
                match list {
                    Ok(list) if list.total == 0 => leptos::either::EitherOf3::A(view! {
                        <p class="panel empty" id="no-approvals">"Nothing is waiting for approval."</p>
                    }),
                    Ok(list) => leptos::either::EitherOf3::B(view! {
                        <Paging first shown=list.approvals.len() total=list.total next=list.next_cursor.clone()/>
                        <ul class="inbox" id="inbox">
                            {list.approvals.into_iter().map(|a| {
                                let for_approve = a.clone();
                                let for_reject = a.clone();
                                let refusal = viewer.refusal(&a);
                                // A plain form post before hydration (or without
                                // JavaScript), the JSON API once hydrated.
                                let buttons = refusal.is_none().then(|| view! {
                                    <form class="decide-form inbox-decide" method="post"
                                        action=format!("/ui/approvals/{}/decide", a.uuid)>
                                        <input type="hidden" name="form_token" value=viewer.form_token.clone().unwrap_or_default()/>
                                        <input type="hidden" name="back" value=back.clone()/>
                                        <button type="submit" name="decision" value="approve" class="btn btn-approve" disabled=move || busy.get()
                                            aria-label=format!("Approve {} ({})", a.tool_name, a.uuid)
                                            on:click=move |ev| { ev.prevent_default(); decide.dispatch((for_approve.clone(), true)); }>
                                            <span aria-hidden="true">"✓ "</span>"Approve"
                                        </button>
                                        <button type="submit" name="decision" value="reject" class="btn btn-reject" disabled=move || busy.get()
                                            aria-label=format!("Reject {} ({})", a.tool_name, a.uuid)
                                            on:click=move |ev| { ev.prevent_default(); decide.dispatch((for_reject.clone(), false)); }>
                                            <span aria-hidden="true">"✕ "</span>"Reject"
                                        </button>
                                    </form>
                                });
                                view! {
                                    <li class="inbox-item" data-approval=a.uuid.clone()>
                                        <div class="inbox-head">
                                            <code class="approval-tool">{a.tool_name.clone()}</code>
                                            {a.server.clone().map(|s| view! { <span class="muted">" on " {s}</span> })}
                                            <span class="muted">" · asked "
                                                <Age at=a.created_at.clone()/>
                                            </span>
                                            {a.requested_by.clone().map(|r| view! {
                                                <span class="muted approval-requested-by">" by " {r}</span>
                                            })}
                                            {a.rule.clone().map(|r| view! {
                                                <span class="muted approval-rule">" · rule: " {crate::components::approval_card::rule_label(&r)}</span>
                                            })}
                                            {(a.needed() > 1).then(|| view! {
                                                <span class="pill approval-quorum">{format!("{} of {}", a.approvals(), a.needed())}</span>
                                            })}
                                        </div>
                                        <p class="approval-description" inner_html=crate::markdown::to_safe_inline_html(&a.description)></p>
                                        <div class="approval-args" data-args=a.tool_args.to_string()><ArgsView args=a.tool_args.clone()/></div>
                                        {refusal.map(|why| view! { <p class="decide-refused" role="note">{why}</p> })}
                                        <div class="approval-actions">
                                            {buttons}
                                            <a class="btn" href=format!("/ui/conversations/{}", a.conversation_id)>"Open conversation"</a>
                                        </div>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    }),
                    Err(e) => leptos::either::EitherOf3::C(view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the approvals: " {e.to_string()}</p>
                            <a href="/ui/approvals" class="btn">"Retry"</a>
                        </div>
                    }),
                }
            })})}
        </Transition>
    }
}

/// Where this page stands when the inbox holds more than one page: how
/// many of the total it shows, and links to the oldest and the newer ones.
#[component]
fn Paging(first: bool, shown: usize, total: u64, next: Option<String>) -> impl IntoView {
    let all = first && next.is_none() && shown as u64 >= total;
    (!all).then(|| {
        let newer = next.map(|c| {
            let q = ApprovalQuery {
                limit: None,
                cursor: Some(c),
            };
            format!("/ui/approvals{}", api::approval_query_string(&q))
        });
        view! {
            <nav class="inbox-paging" id="inbox-paging" aria-label="Inbox pages">
                <span class="muted">{format!("Showing {shown} of {total} waiting")}</span>
                {(!first).then(|| view! { <a class="btn" href="/ui/approvals" id="inbox-oldest">"Oldest"</a> })}
                {newer.map(|href| view! { <a class="btn" href=href id="inbox-newer">"Newer →"</a> })}
            </nav>
        }
    })
}

/// A timestamp: the absolute time when rendered on the server, "N min ago"
/// once the browser runs (after hydration, so the two never disagree).
#[component]
pub fn Age(at: String) -> impl IntoView {
    let text = RwSignal::new(short_time(&at));
    #[cfg(feature = "hydrate")]
    {
        let at = at.clone();
        Effect::new(move |_| {
            use leptos::web_sys::js_sys::Date;
            let then = Date::new(&leptos::wasm_bindgen::JsValue::from_str(&at)).get_time();
            if !then.is_nan() {
                text.set(relative((Date::now() - then) / 1000.0));
            }
        });
    }
    let title = short_time(&at);
    view! { <time datetime=at title=title>{move || text.get()}</time> }
}

/// `seconds` ago in words.
pub fn relative(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    match s {
        0..=59 => "just now".to_string(),
        60..=3599 => format!("{} min ago", s / 60),
        3600..=86_399 => format!("{} h ago", s / 3600),
        _ => format!("{} days ago", s / 86_400),
    }
}

#[cfg(test)]
mod tests {
    use super::relative;

    #[test]
    fn ages_read_naturally() {
        assert_eq!(relative(5.0), "just now");
        assert_eq!(relative(125.0), "2 min ago");
        assert_eq!(relative(7300.0), "2 h ago");
        assert_eq!(relative(200_000.0), "2 days ago");
    }
}
