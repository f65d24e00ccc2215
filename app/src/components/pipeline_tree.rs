//! The orchestration tree as nested lists: each configured node with its
//! kind, where its output goes, its model or remote agent, and, for one
//! conversation's run, where it stands (in words and a mark, never colour
//! alone). The running or paused leaf node is highlighted; finished ones
//! are ticked. The run state is a signal, so live updates re-render only the
//! marks.

use crate::pipeline::{NodeRun, PipelineNode, PipelineState, RunStatus};
use leptos::prelude::*;

/// Renders `root` with the state of `run`.
#[component]
pub fn PipelineTree(
    root: PipelineNode,
    #[prop(into)] run: Signal<Option<PipelineState>>,
) -> impl IntoView {
    view! {
        <ul class="ptree" id="pipeline-tree" aria-label="Pipeline nodes">
            {node_item(root, run)}
        </ul>
    }
}

/// Key (for `data-status`), mark and words for a node's latest run.
fn describe(status: Option<RunStatus>) -> (&'static str, &'static str, &'static str) {
    match status {
        None => ("idle", "○", "not run"),
        Some(RunStatus::Running) => ("running", "●", "running"),
        Some(RunStatus::Paused) => ("paused", "‖", "waiting for approval"),
        Some(RunStatus::Completed) => ("completed", "✓", "done"),
        Some(RunStatus::Stopped) => ("stopped", "✕", "stopped after a rejection"),
        Some(RunStatus::Failed) => ("failed", "✕", "failed"),
        Some(RunStatus::Interrupted) => ("interrupted", "!", "interrupted by a restart"),
    }
}

/// One node and its children (type-erased: the tree is recursive).
fn node_item(node: PipelineNode, run: Signal<Option<PipelineState>>) -> AnyView {
    let name = node.name.clone();
    let status = {
        let name = name.clone();
        Memo::new(move |_| {
            run.with(|s| {
                s.as_ref()
                    .and_then(|s| s.latest(&name))
                    .map(|r: &NodeRun| (r.status, r.iteration))
            })
        })
    };
    let key = move || describe(status.get().map(|(s, _)| s)).0;
    let is_loop = node.kind == "loop";
    // Only the node doing the work is "current"; its parents show their
    // status in words.
    let leaf = node.children.is_empty();
    let detail = match (&node.model, &node.url, node.max_iterations) {
        (Some(m), _, _) => Some(format!("model {m}")),
        (_, Some(u), _) => Some(format!("remote agent {u}")),
        (_, _, Some(n)) => Some(format!("at most {n} rounds")),
        _ => None,
    };
    let children = node.children.clone();
    view! {
        <li
            class="pnode"
            class:current=move || leaf && matches!(key(), "running" | "paused")
            data-node=name.clone()
            data-kind=node.kind.clone()
            data-status=key
        >
            <div class="pnode-row">
                <span class="pnode-mark" aria-hidden="true">{move || describe(status.get().map(|(s, _)| s)).1}</span>
                <code class="pnode-name">{name.clone()}</code>
                <span class="pill pill-kind">{node.kind.clone()}</span>
                {node.output_key.clone().map(|k| view! { <span class="muted pnode-output">"→ {" {k} "}"</span> })}
                {detail.map(|d| view! { <span class="muted pnode-detail">{d}</span> })}
                {node.can_exit_loop.then(|| view! { <span class="muted">"may end the loop"</span> })}
                {(!node.asks_approval && node.kind == "llm").then(|| view! {
                    <span class="pill pill-free" title="Inside a parallel or loop node without approvals: enforce">"tools run without approval"</span>
                })}
                {(node.on_reject == "stop").then(|| view! { <span class="muted">"stops on a rejection"</span> })}
                <span class="pnode-status">
                    {move || {
                        let st = status.get();
                        let words = describe(st.map(|(s, _)| s)).2;
                        match st.and_then(|(_, it)| it) {
                            Some(i) if is_loop => format!("{words} · round {i}"),
                            _ => words.to_string(),
                        }
                    }}
                </span>
            </div>
            {(!children.is_empty()).then(|| view! {
                <ul class="ptree-children">
                    {children.into_iter().map(|c| node_item(c, run)).collect_view()}
                </ul>
            })}
        </li>
    }
    .into_any()
}
