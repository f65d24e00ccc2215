//! Carrying out a plan with the engine: the turn it starts or continues,
//! the decision or the answer it gives. Turns run detached from the HTTP
//! request (the engine spawns them), so a client that disconnects does
//! not stop its task.

use super::error::TaskError;
use super::plan::{Plan, load};
use crate::a2a::wire::Incoming;
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use app::models::Conversation;

/// The task a plan works on, made now (empty) when the plan starts one:
/// for callers that must know it before the turn runs.
pub(crate) async fn task_for(
    engine: &Engine,
    plan: &Plan,
    m: &Incoming,
    ctx: &CallContext,
) -> Result<String, TaskError> {
    match plan.conversation() {
        Some(id) => Ok(id.to_string()),
        None => create(engine, m, ctx).await,
    }
}

/// Creates an empty conversation for a new task (in the client's context,
/// if it named one) and returns its id.
pub(crate) async fn create(
    engine: &Engine,
    m: &Incoming,
    ctx: &CallContext,
) -> Result<String, TaskError> {
    let context = m.context_id.clone();
    let (c, _) = engine.start_in_context(None, context, ctx.clone()).await?;
    Ok(c.id)
}

/// Runs a plan to its end (the turn finished or paused) and returns the
/// conversation. A failed model call is a failed task, not an RPC error.
pub(crate) async fn run(
    engine: &Engine,
    plan: Plan,
    ctx: CallContext,
) -> Result<Conversation, TaskError> {
    let e = engine;
    let out = match plan {
        Plan::New(m) => {
            let context = m.context_id.clone();
            let named = context.is_some();
            let out = e
                .start_in_context(Some(m.text), context, ctx)
                .await
                .map(|(c, _)| c);
            match out {
                // The conversation as stored, with the context it opened in.
                Ok(c) if named => Ok(load(engine, &c.id).await?),
                out => out,
            }
        }
        Plan::Turn { id, m } => e
            .send_message(&id, m.text, ctx)
            .await
            .map(|r| r.conversation),
        Plan::Decide { uuid, decision, .. } => {
            e.decide(&uuid, decision, ctx).await.map(|r| r.conversation)
        }
        Plan::Answer { uuid, answer, .. } => {
            e.answer(&uuid, answer, ctx).await.map(|r| r.conversation)
        }
    };
    match out {
        Ok(c) => Ok(c),
        Err(EngineError::Llm { conversation, .. }) => Ok(*conversation),
        // Cancelled while it ran: the task as the cancel left it.
        Err(EngineError::Cancelled(id)) => load(engine, &id).await,
        Err(e) => Err(e.into()),
    }
}
