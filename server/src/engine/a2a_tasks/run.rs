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
    let (c, _) = engine.start_conversation(None, ctx.clone()).await?;
    if let Some(context) = &m.context_id {
        engine.store().set_context(&c.id, context).await?;
    }
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
            let out = e
                .start_conversation(Some(m.text), ctx)
                .await
                .map(|(c, _)| c);
            match (out, context) {
                (Ok(c), Some(context)) => {
                    engine.store().set_context(&c.id, &context).await?;
                    Ok(load(engine, &c.id).await?)
                }
                (out, _) => out,
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
