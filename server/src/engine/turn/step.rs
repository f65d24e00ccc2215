//! A model answer recorded as one step (its text, then one tool message per
//! call, calls that cannot run answered at once), and the check for a
//! rejected call that ends an `on_reject: stop` scope.

use crate::domain::tools::{ToolError, ToolInfo};
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::scope::Scope;
use crate::llm::ChatResponse;
use crate::store::{NewMessage, StepMessage, StoreError, StoredMessage};
use app::models::{EventKind, Role, ToolCall};

/// What one recorded model step asks for next.
pub(super) enum Step {
    /// A final answer: its text, and the conversation as the write that
    /// ended the turn left it (when it did).
    Final(String, Option<Box<app::models::Conversation>>),
    /// Calls to handle: the step's messages as stored.
    Calls(Vec<StoredMessage>),
}

impl Engine {
    /// The text that ends a scope with `on_reject: stop`, if one of its
    /// calls was rejected.
    pub(in crate::engine) async fn rejected_in(
        &self,
        mine: &[&StoredMessage],
    ) -> Result<Option<String>, EngineError> {
        let ids: Vec<String> = mine
            .iter()
            .filter(|m| {
                m.message
                    .tool_call
                    .as_ref()
                    .is_some_and(|t| t.is_error == Some(true))
            })
            .map(|m| m.message.id.clone())
            .collect();
        if ids.is_empty() {
            return Ok(None);
        }
        let found = self.inner.store.first_declined(ids).await?;
        Ok(found.map(|a| {
            let reason = a
                .reason
                .as_deref()
                .map(str::trim)
                .filter(|r| !r.is_empty())
                .map(|r| format!(" (reason: {r})"))
                .unwrap_or_default();
            format!(
                "Stopped: the operator rejected `{}`{reason}, and this node is set to `on_reject: stop`, so the pipeline ends here.",
                a.approval.tool_name
            )
        }))
    }

    /// Stores one model answer: its text, then one tool message per call.
    /// Calls that cannot run (bad arguments, unknown tool) get their error
    /// result right away, so the model hears about them on the next step.
    /// An answer without calls ends the turn: the running flag is cleared in
    /// the same transaction and the text is returned.
    pub(super) async fn record_step(
        &self,
        conversation_id: &str,
        resp: ChatResponse,
        tools: &[ToolInfo],
        scope: &Scope,
        step: &str,
    ) -> Result<Step, StoreError> {
        let final_text = resp.tool_calls.is_empty().then(|| {
            let t = resp.text.clone().unwrap_or_default();
            if t.is_empty() {
                "(the model returned an empty answer)".to_string()
            } else {
                t
            }
        });
        let step = step.to_string();
        let mut rows: Vec<StepMessage> = Vec::new();
        let text = resp.text.clone().unwrap_or_default();
        if !text.is_empty() || resp.tool_calls.is_empty() {
            let content = if text.is_empty() {
                "(the model returned an empty answer)".to_string()
            } else {
                text
            };
            rows.push(StepMessage {
                message: NewMessage {
                    step: Some(step.clone()),
                    ..NewMessage::text(Role::Assistant, content)
                }
                .in_node(scope.node.as_ref()),
                immediate: None,
            });
        }
        for c in resp.tool_calls {
            let info = tools.iter().find(|t| t.name == c.name);
            let immediate = if let Some(e) = &c.arguments_error {
                Some((
                    format!("Invalid arguments, the tool was not run: {e}"),
                    true,
                ))
            } else if info.is_none() {
                let names: Vec<&str> = tools.iter().map(|t| t.name.as_str()).collect();
                Some((
                    format!(
                        "{}; the available tools are: {}",
                        ToolError::Unknown(c.name.clone()),
                        names.join(", ")
                    ),
                    true,
                ))
            } else {
                None
            };
            rows.push(StepMessage {
                message: NewMessage {
                    tool_call: Some(ToolCall {
                        name: c.name.clone(),
                        arguments: c.arguments.clone(),
                        server: info.map(|i| i.server.clone()),
                        ..Default::default()
                    }),
                    call_id: Some(c.id.clone()),
                    step: Some(step.clone()),
                    signature: c.signature.clone(),
                    ..NewMessage::text(Role::Tool, "")
                }
                .in_node(scope.node.as_ref()),
                immediate,
            });
        }
        let ends_turn = final_text.is_some();
        let clear_running = ends_turn && scope.owns_status();
        // With the turn's end, its reply is read where it was written.
        let recorded = self
            .inner
            .store
            .record_step(conversation_id, rows, clear_running)
            .await?;
        self.inner
            .events
            .emit(EventKind::MessageAdded, conversation_id, |e| {
                e.running = Some(!clear_running);
                e.node = scope.node_name();
            });
        Ok(match final_text {
            Some(t) => Step::Final(t, recorded.conversation.map(Box::new)),
            None => Step::Calls(recorded.messages),
        })
    }
}
