//! The A2A tasks of this agent as one handle: the engine and the executor
//! that runs messages (the engine itself, or the TCK's script), so the
//! HTTP edge only decodes a request, calls here and encodes the answer.

use super::error::TaskError;
use super::executor::{Executor, Ran, view_of};
use super::plan::{Plan, load};
use super::push_watch::{self, PushWatch};
use super::run::task_for;
use crate::a2a::wire::{Dialect, Incoming, TaskView};
use crate::domain::tasks::Tasks;
use crate::domain::tools::CallContext;
use crate::engine::handle::Engine;
use app::models::Conversation;
use std::sync::Arc;

/// The A2A task service. Cheap to clone: three handles.
#[derive(Clone)]
pub(crate) struct A2aTasks {
    engine: Engine,
    executor: Arc<dyn Executor>,
    push: Arc<PushWatch>,
}

impl A2aTasks {
    pub(crate) fn new(engine: Engine, executor: Arc<dyn Executor>) -> A2aTasks {
        A2aTasks {
            engine,
            executor,
            push: Arc::default(),
        }
    }

    /// Starts the push watcher and its sweep as tasks of `owner`.
    pub(crate) fn start_push(&self, owner: &Tasks) {
        push_watch::start(
            self.push.clone(),
            self.engine.clone(),
            self.executor.clone(),
            owner,
        );
    }

    /// A push config was stored for `task_id`: watch the task and queue
    /// its current state for the config.
    pub(crate) async fn push_config_added(&self, task_id: &str) {
        self.push
            .config_added(&self.engine, self.executor.as_ref(), task_id)
            .await;
    }

    /// Reads a task's conversation or says the task does not exist.
    pub(crate) async fn load(&self, id: &str) -> Result<Conversation, TaskError> {
        load(&self.engine, id).await
    }

    /// What a message means for its task, as the executor plans it.
    pub(crate) async fn plan(&self, m: &Incoming, d: Dialect) -> Result<Plan, TaskError> {
        self.executor.plan(&self.engine, m, d).await
    }

    /// Carries out a plan until the task completes or needs input.
    pub(crate) async fn run(&self, plan: Plan, ctx: CallContext) -> Result<Ran, TaskError> {
        self.executor.run(&self.engine, plan, ctx).await
    }

    /// The task a plan works on, made now (empty) when the plan starts one.
    pub(crate) async fn task_for(
        &self,
        plan: &Plan,
        m: &Incoming,
        ctx: &CallContext,
    ) -> Result<String, TaskError> {
        task_for(&self.engine, plan, m, ctx).await
    }

    /// The task view of a conversation as the executor sees it.
    pub(crate) fn view_of(&self, c: &Conversation, history: Option<usize>) -> TaskView {
        view_of(&self.engine, self.executor.as_ref(), c, history)
    }
}
