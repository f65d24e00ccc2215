//! `/ui/pipeline`: the configured orchestration tree and one
//! conversation's run of it (`?conversation=<id>`, by default the newest
//! conversation that ran the pipeline), updated live: the current node is
//! highlighted, finished ones are ticked.

use crate::api;
use crate::components::pipeline_tree::PipelineTree;
use crate::components::status_badge::StatusBadge;
use crate::models::{Conversation, ListQuery};
use crate::pipeline::PipelineState;
use crate::reloading::reloading;
use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

/// How many recent conversations are searched for one with a run.
const RECENT: u32 = 20;

/// The conversation whose run is shown: the one asked for, else the
/// newest of the recent ones that ran the pipeline (found from the list's
/// items, then read whole).
async fn pick(wanted: Option<String>) -> Option<Conversation> {
    let id = match wanted {
        Some(id) => id,
        None => {
            api::list_conversations(ListQuery {
                limit: Some(RECENT),
                ..Default::default()
            })
            .await
            .ok()?
            .conversations
            .into_iter()
            .find(|c| c.has_pipeline_run)?
            .id
        }
    };
    api::get_conversation(id).await.ok()
}

fn run_of(c: &Conversation) -> Option<PipelineState> {
    PipelineState::parse(c.pipeline_state.as_ref())
}

#[component]
pub fn PipelinePage() -> impl IntoView {
    let query = use_query_map();
    let wanted = move || query.read().get("conversation");
    let tree = ArcResource::new(|| (), |_| api::get_pipeline());
    let live = crate::live::use_live();
    let chosen = ArcResource::new(move || (wanted(), live.tick.get()), |(w, _)| pick(w));
    let run = RwSignal::new(None::<PipelineState>);
    let conv = RwSignal::new(None::<Conversation>);

    view! {
        <section class="page-head"><h1>"Pipeline"</h1></section>
        <Transition fallback=|| view! { <p class="muted">"Loading the pipeline…"</p> }>
            {reloading(move || { let tree = tree.clone(); let chosen = chosen.clone(); Suspend::new(async move {
                // Rendered on the server too, so the first paint already
                // shows the run; live reloads update the same signals.
                let c = chosen.await;
                run.set(c.as_ref().and_then(run_of));
                conv.set(c);
                match tree.await {
                    Ok(view) => match view.pipeline {
                        Some(root) => leptos::either::EitherOf3::A(view! {
                            <RunHeader conv=conv run=run/>
                            <PipelineTree root=root run=run/>
                        }),
                        None => leptos::either::EitherOf3::B(view! {
                            <p class="panel empty" id="no-pipeline">
                                "This agent runs in simple mode: one model with its tools. Add an "
                                <code>"agent:"</code>
                                " tree (sequential, parallel, loop, llm and a2a nodes) to agent.yaml to run a pipeline."
                            </p>
                        }),
                    },
                    Err(e) => leptos::either::EitherOf3::C(view! {
                        <div class="alert alert-error" role="alert">
                            <p>"Could not load the pipeline: " {e.to_string()}</p>
                            <a href="/ui/pipeline" class="btn">"Retry"</a>
                        </div>
                    }),
                }
            })})}
        </Transition>
    }
}

/// Which run is shown, and where it stands.
#[component]
fn RunHeader(
    conv: RwSignal<Option<Conversation>>,
    run: RwSignal<Option<PipelineState>>,
) -> impl IntoView {
    view! {
        <div class="panel run-head" id="run-head">
            {move || match (conv.get(), run.get()) {
                (Some(c), Some(r)) => leptos::either::Either::Left(view! {
                    <p>
                        "Run of "
                        <a href=format!("/ui/conversations/{}", c.id) id="run-conversation">"conversation " <code>{c.id[..8.min(c.id.len())].to_string()}</code></a>
                        " " <StatusBadge status=c.status/>
                        " · run " <strong class="run-status" data-status=r.status.as_str()>{r.status.as_str()}</strong>
                    </p>
                    <p class="muted">"Message: " {r.user_message.clone()}</p>
                    {(!r.pending.is_empty()).then(|| view! {
                        <p class="run-pending">
                            {format!("Waiting for {} approval(s): ", r.pending.len())}
                            {r.pending.iter().map(|p| format!("{} in {}", p.tool_name, p.node)).collect::<Vec<_>>().join(", ")}
                            " · " <a href="/ui/approvals">"Decide in the inbox"</a>
                        </p>
                    })}
                    {r.error.clone().map(|e| view! { <p class="alert alert-error">{e}</p> })}
                }),
                _ => leptos::either::Either::Right(view! {
                    <p class="muted" id="no-run">"No conversation has run the pipeline yet. " <a href="/">"Start one"</a></p>
                }),
            }}
        </div>
    }
}
