//! The Tasks extension (`io.modelcontextprotocol/tasks`, SEP-2663) for the
//! agent's tool (CLIENTS.md §2): a client that declares it gets a task at
//! once and polls it, instead of holding the call open while the turn
//! runs and a person decides.
//!
//! Key decisions: the task id is the conversation's id, so it is stable
//! across replicas and restarts with nothing stored beside it (the
//! conversation is the truth: its turn running is `working`, a pause this
//! caller may settle is `input_required`, a pause on someone else stays
//! `working` with the page in its message, the end is `completed`,
//! `failed` or `cancelled`). `tasks/update` settles through the same
//! commands as every other channel; `tasks/cancel` is the conversation's
//! cancel (the approval is cancelled, nothing runs).

use super::reply::{Abilities, McpReply, Pause};
use super::round_state::WaitsOn;
use super::service::{McpCall, McpEndpoint, response_of};
use crate::domain::tools::CallContext;
use crate::engine::error::EngineError;
use app::models::ConversationStatus;
use std::collections::BTreeMap;

/// A task as `tasks/get` shows it.
#[derive(Clone, Debug)]
pub(crate) enum TaskState {
    /// The turn runs, or waits on someone else (`waiting`: what, for the
    /// status message).
    Working {
        waiting: Option<Pause>,
    },
    /// Waits on this caller: the request to answer.
    InputRequired {
        on: Pause,
        form: bool,
    },
    /// The turn ended: the reply to give as the task's result.
    Completed(McpReply),
    /// The last turn failed: why, as the conversation recorded it.
    Failed(String),
    Cancelled,
}

/// A task's state and its times.
#[derive(Clone, Debug)]
pub(crate) struct TaskView {
    pub(crate) id: String,
    pub(crate) state: TaskState,
    pub(crate) created_at: String,
    pub(crate) updated_at: String,
}

impl McpEndpoint {
    /// Starts `call` as a task: the conversation is opened (or checked)
    /// now and its turn runs as a task of the engine's owner; answers the
    /// task as it stands right after.
    pub(crate) async fn start_task(
        &self,
        call: McpCall,
        ctx: CallContext,
        can: Abilities,
    ) -> Result<TaskView, EngineError> {
        let message = call.message.trim().to_string();
        let id = match call.conversation_id.filter(|c| !c.is_empty()) {
            Some(id) => {
                self.engine().may_continue(&id, &ctx).await?;
                id
            }
            None => {
                if message.is_empty() {
                    return Err(EngineError::Invalid(
                        "`message` must not be empty: say what the agent should do".into(),
                    ));
                }
                self.engine().llm()?;
                let (c, _) = self.engine().start_conversation(None, ctx.clone()).await?;
                c.id
            }
        };
        if !message.is_empty() {
            let store = self.engine().store().clone();
            let before = crate::engine::commands::load(&store, &id)
                .await?
                .messages
                .len();
            let (engine, id2, ctx2) = (self.engine().clone(), id.clone(), ctx.clone());
            self.engine().tasks().spawn_background("mcp task", async move {
                // A refusal (a pause in the way) leaves the conversation as
                // it is, which is what the task then shows.
                if let Err(e) = engine.send_message(&id2, message, ctx2).await {
                    tracing::info!(conversation = %id2, error = %e, "an MCP task's message was not run");
                }
            });
            // The task is answered once its message is in (or refused), so
            // a first `tasks/get` never shows the conversation from before.
            let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(2);
            loop {
                let c = crate::engine::commands::load(&store, &id).await?;
                if c.running || c.messages.len() > before || tokio::time::Instant::now() >= deadline
                {
                    break;
                }
                tokio::time::sleep(std::time::Duration::from_millis(10)).await;
            }
        }
        self.task(&id, &ctx, can).await
    }

    /// `tasks/get`: the task `id` as its conversation stands.
    pub(crate) async fn task(
        &self,
        id: &str,
        ctx: &CallContext,
        can: Abilities,
    ) -> Result<TaskView, EngineError> {
        self.engine().may_continue(id, ctx).await?;
        let c = crate::engine::commands::load(self.engine().store(), id).await?;
        let (created_at, updated_at, running, status) = (
            c.created_at.clone(),
            c.updated_at.clone(),
            c.running,
            c.status,
        );
        let failure = c
            .messages
            .last()
            .map(|m| m.content.clone())
            .unwrap_or_default();
        let state = match status {
            _ if running => TaskState::Working { waiting: None },
            ConversationStatus::Cancelled => TaskState::Cancelled,
            ConversationStatus::Failed => TaskState::Failed(failure),
            _ => match self.reply_of(c, ctx, can) {
                McpReply::Ask { on, form, .. } => TaskState::InputRequired { on, form },
                McpReply::Waiting { on, .. } => TaskState::Working { waiting: Some(on) },
                ended => TaskState::Completed(ended),
            },
        };
        Ok(TaskView {
            id: id.to_string(),
            state,
            created_at,
            updated_at,
        })
    }

    /// `tasks/update`: the answer to what task `id` waits on (the key of
    /// its input request), settled through the engine; the turn goes on
    /// as a task of the engine's owner. Keys that are not outstanding are
    /// ignored, as the extension says.
    pub(crate) async fn update_task(
        &self,
        id: &str,
        responses: &BTreeMap<String, serde_json::Value>,
        ctx: CallContext,
        can: Abilities,
    ) -> Result<(), EngineError> {
        let view = self.task(id, &ctx, can).await?;
        let TaskState::InputRequired { on, .. } = view.state else {
            return Ok(());
        };
        let waits_on: WaitsOn = on.waits_on();
        let Some(v) = responses.get(&waits_on.key()) else {
            return Ok(());
        };
        let response = response_of(v)?;
        let round = self.round_of(id, &on, &ctx);
        let me = self.clone();
        self.engine()
            .tasks()
            .spawn_background("mcp task update", async move {
                if let Err(e) = me.respond(&round, response, None, ctx, can).await {
                    tracing::info!(error = %e, "an MCP task's answer was not recorded");
                }
            });
        Ok(())
    }

    /// `tasks/cancel`: the conversation's turn is cancelled (its approval
    /// too: nothing runs).
    pub(crate) async fn cancel_task(&self, id: &str, ctx: CallContext) -> Result<(), EngineError> {
        self.engine().may_continue(id, &ctx).await?;
        self.engine().cancel(id, ctx).await.map(|_| ())
    }
}
