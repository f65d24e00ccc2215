//! What runs behind the A2A protocol layer.
//!
//! The protocol code (`http::a2a`) parses, answers and streams; an
//! [`Executor`] decides what a message means for its task (`plan`) and
//! carries it out (`run`). The agent engine is the normal executor; the
//! conformance executor (`agent --a2a-conformance`, `conformance.rs`)
//! serves the A2A TCK's scripted behaviours on the same task store and the
//! same streaming code.

use super::error::TaskError;
use super::plan::{Plan, plan};
use super::run::run;
use super::view::view;
use crate::a2a::wire::{ArtifactView, Dialect, Incoming, MessageView, TaskState, TaskView};
use crate::domain::BoxFuture;
use crate::domain::tools::CallContext;
use crate::engine::handle::Engine;
use app::models::{Conversation, ConversationStatus};

/// What a run produced.
#[derive(Debug)]
pub(crate) enum Ran {
    /// The task, as its conversation stands now.
    Task(Box<Conversation>),
    /// A direct answer without a task (the engine always answers with a
    /// task; the TCK's `tck-message-response` does not).
    #[cfg_attr(not(feature = "a2a-tck"), allow(dead_code))]
    Message(MessageView),
}

/// Plans and runs A2A messages.
pub(crate) trait Executor: Send + Sync {
    /// What `m` means for the task it names (or a new one); may refuse it.
    fn plan<'a>(
        &'a self,
        engine: &'a Engine,
        m: &'a Incoming,
        d: Dialect,
    ) -> BoxFuture<'a, Result<Plan, TaskError>>;

    /// Carries out a plan until the task completes or needs input.
    fn run<'a>(
        &'a self,
        engine: &'a Engine,
        plan: Plan,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<Ran, TaskError>>;

    /// Artifacts beyond the conversation's answer (the TCK's file and data
    /// artifacts); `None` uses the answer.
    fn artifacts(&self, _task_id: &str) -> Option<Vec<ArtifactView>> {
        None
    }

    /// Whether a task whose turn ended without an answer is still open
    /// (`working`) rather than failed: the conformance executor's plain
    /// tasks are.
    fn open(&self, _task_id: &str) -> bool {
        false
    }
}

/// The agent engine as the executor.
pub(crate) struct EngineExecutor;

impl Executor for EngineExecutor {
    fn plan<'a>(
        &'a self,
        engine: &'a Engine,
        m: &'a Incoming,
        d: Dialect,
    ) -> BoxFuture<'a, Result<Plan, TaskError>> {
        Box::pin(plan(engine, m, d))
    }

    fn run<'a>(
        &'a self,
        engine: &'a Engine,
        plan: Plan,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<Ran, TaskError>> {
        Box::pin(async move { run(engine, plan, ctx).await.map(|c| Ran::Task(Box::new(c))) })
    }
}

/// The task view of a conversation as `executor` sees it (busy state,
/// extra artifacts).
pub(crate) fn view_of(
    engine: &Engine,
    executor: &dyn Executor,
    c: &Conversation,
    history: Option<usize>,
) -> TaskView {
    let mut v = view(c, engine.runs(c), history);
    if v.state == TaskState::Failed
        && c.status == ConversationStatus::Active
        && executor.open(&c.id)
    {
        v.state = TaskState::Working;
    }
    if let Some(extra) = executor.artifacts(&c.id)
        && v.state == TaskState::Completed
    {
        v.artifacts = extra;
    }
    v
}
