//! `/ui/tools`: every tool the agent can call (MCP tools and, later, A2A
//! sub-agents) with its server, description, input schema, whether it
//! needs approval (in words, not colour alone) and whether its server is up;
//! then the live grants (REACH.md §3), each with a Revoke form that posts
//! with or without JavaScript.

use crate::api;
use crate::models::ToolDescription;
use crate::reloading::reloading;
use leptos::prelude::*;

#[component]
pub fn ToolsPage() -> impl IntoView {
    let tools = ArcResource::new(|| (), |_| api::list_tools());
    let reload = {
        let tools = tools.clone();
        Callback::new(move |_: ()| tools.refetch())
    };
    view! {
        <section class="page-head"><h1>"Tools"</h1></section>
        <Transition fallback=|| view! { <p class="muted">"Loading tools…"</p> }>
            {reloading(move || { let tools = tools.clone(); Suspend::new(async move {
                match tools.await {
                    Ok(list) if list.tools.is_empty() => leptos::either::EitherOf3::A(view! {
                        <p class="panel empty" id="no-tools">"This agent has no tools. Add MCP servers under " <code>"mcp_servers"</code> " in agent.yaml."</p>
                    }),
                    Ok(list) => {
                        let n = list.tools.len();
                        let approve = list.tools.iter().filter(|t| always_asks(t)).count();
                        leptos::either::EitherOf3::B(view! {
                            <p class="muted">{format!("{n} tools; {approve} need approval before they run.")}</p>
                            <ul class="tools" id="tools">
                                {list.tools.into_iter().map(|t| view! { <ToolRow t=t reload=reload/> }).collect_view()}
                            </ul>
                        })
                    }
                    Err(e) => leptos::either::EitherOf3::C(view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the tools: " {e.to_string()}</p>
                            <a href="/ui/tools" class="btn">"Retry"</a>
                        </div>
                    }),
                }
            })})}
        </Transition>
        <Grants/>
    }
}

/// The live grants: what they let run without asking, until when, and a
/// Revoke form (a plain post, so it works before and without hydration).
#[component]
fn Grants() -> impl IntoView {
    let grants = ArcResource::new(|| (), |_| api::list_grants());
    view! {
        <section class="page-head"><h2 id="grants-title">"Grants"</h2></section>
        <Transition fallback=|| ()>
            {reloading(move || { let grants = grants.clone(); Suspend::new(async move {
                match grants.await {
                    Ok(l) if l.grants.is_empty() => leptos::either::EitherOf3::A(view! {
                        <p class="muted" id="no-grants">"No live grants: every call that needs approval asks."</p>
                    }),
                    Ok(l) => {
                        let token = crate::components::viewer::current().await.form_token.unwrap_or_default();
                        leptos::either::EitherOf3::B(view! {
                            <ul class="grants" id="grants" aria-labelledby="grants-title">
                                {l.grants.into_iter().map(|g| {
                                    let action = format!("/ui/grants/{}/revoke", g.id);
                                    let matches = match &g.match_pointers {
                                        Some(_) => format!("when {} repeat{}", g.values, if g.values.as_object().is_some_and(|m| m.len() == 1) { "s" } else { "" }),
                                        None => format!("when the arguments are exactly {}", g.values),
                                    };
                                    let scope = match &g.conversation_id {
                                        Some(c) => view! { "in " <a href=format!("/ui/conversations/{c}")>"one conversation"</a> }.into_any(),
                                        None => view! { "in every conversation" }.into_any(),
                                    };
                                    view! {
                                        <li class="grant" data-grant=g.id.clone() data-tool=g.tool.clone()>
                                            <p>
                                                <code>{g.tool.clone()}</code>
                                                {g.server.clone().map(|s| format!(" on {s}"))}
                                                " runs without asking " {matches} ", " {scope}
                                                {format!(", until {} (granted by {}; used {} time{})", crate::components::time::short_time(&g.expires_at), g.created_by, g.uses, if g.uses == 1 { "" } else { "s" })}
                                            </p>
                                            <form method="post" action=action class="revoke-form">
                                                <input type="hidden" name="form_token" value=token.clone()/>
                                                <button type="submit" class="btn btn-reject">"Revoke"</button>
                                            </form>
                                        </li>
                                    }
                                }).collect_view()}
                            </ul>
                        })
                    }
                    Err(e) => leptos::either::EitherOf3::C(view! {
                        <p class="alert alert-error" role="alert">"Could not load the grants: " {e.to_string()}</p>
                    }),
                }
            })})}
        </Transition>
    }
}

/// What happens to a call, as far as the tool alone tells.
enum Effective {
    Allow,
    Approve,
    Deny,
    Depends,
}

fn effective(t: &ToolDescription) -> Effective {
    let by_action = |a: &str| match a {
        "allow" => Effective::Allow,
        "deny" => Effective::Deny,
        _ => Effective::Approve,
    };
    match t.rules.first() {
        // An older server: the hint alone.
        None if t.destructive_hint => Effective::Approve,
        None => Effective::Allow,
        Some(r) if r.conditional => Effective::Depends,
        Some(r) => by_action(&r.action),
    }
}

/// Whether the tool needs approval for every call (the page's count).
fn always_asks(t: &ToolDescription) -> bool {
    matches!(effective(t), Effective::Approve)
}

#[component]
fn ToolRow(t: ToolDescription, reload: Callback<()>) -> impl IntoView {
    let changed = t.pin.clone().filter(|p| p.status == "changed" || p.status == "held").map(|p| {
        let card = p.status == "held";
        let error = ArcRwSignal::new(None::<String>);
        let shown = error.clone();
        let name = t.name.clone();
        let digest = p.digest.clone();
        let accept = move |_| {
            let (name, digest, error) = (name.clone(), digest.clone(), error.clone());
            leptos::task::spawn_local(async move {
                match api::accept_tool(name, digest).await {
                    Ok(_) => reload.run(()),
                    Err(e) => error.set(Some(e.to_string())),
                }
            });
        };
        view! {
            <div class="tool-changed" data-tool-changed="true" data-card-held=card.to_string()>
                <p>
                    <span class="pill pill-down">{if card { "Agent card not trusted: held" } else { "Definition changed: held" }}</span>
                    {p.downgrade.then_some(" It no longer says it is destructive, so it stays held until accepted, whatever on_tool_change says.")}
                    {p.reason.clone().map(|r| format!(" {r}."))}
                </p>
                <ul class="tool-diff" aria-label="What changed since it was pinned">
                    {p.diff.iter().map(|l| view! { <li><code>{l.clone()}</code></li> }).collect_view()}
                </ul>
                <button type="button" class="btn" on:click=accept>{if card { "Accept the held card" } else { "Accept the new definition" }}</button>
                <p class="form-error" role="alert">{move || shown.get()}</p>
            </div>
        }
    });
    let schema = serde_json::to_string_pretty(&t.input_schema).unwrap_or_default();
    view! {
        <li class="tool-row" data-tool=t.name.clone()>
            <div class="tool-head">
                <code class="tool-name">{t.name.clone()}</code>
                <span class="muted">" on " <span class="tool-server">{t.server.clone()}</span></span>
                {match effective(&t) {
                    Effective::Approve => leptos::either::EitherOf4::A(view! { <span class="pill pill-approve" data-needs-approval="true">"Needs approval"</span> }),
                    Effective::Allow => leptos::either::EitherOf4::B(view! { <span class="pill pill-free" data-needs-approval="false">"Runs without approval"</span> }),
                    Effective::Deny => leptos::either::EitherOf4::C(view! { <span class="pill pill-down" data-needs-approval="denied">"Denied by a rule"</span> }),
                    Effective::Depends => leptos::either::EitherOf4::D(view! { <span class="pill pill-approve" data-needs-approval="depends">"Depends on the arguments (see rules)"</span> }),
                }}
                {(!t.available).then(|| view! { <span class="pill pill-down">"Server unavailable"</span> })}
            </div>
            <p class="tool-description">{if t.description.is_empty() { "(no description)".to_string() } else { t.description.clone() }}</p>
            {(!t.rules.is_empty()).then(|| view! {
                <ol class="tool-rules" aria-label="Rules, in the order they are tried">
                    {t.rules.iter().map(|r| view! {
                        <li data-rule=r.name.clone() data-action=r.action.clone()>
                            <code>{r.name.clone()}</code>
                            {format!(": {}{}", r.action, if r.conditional { " (when its conditions hold)" } else { "" })}
                        </li>
                    }).collect_view()}
                </ol>
            })}
            {changed}
            <details><summary>"Input schema"</summary><pre class="tool-schema">{schema}</pre></details>
        </li>
    }
}
