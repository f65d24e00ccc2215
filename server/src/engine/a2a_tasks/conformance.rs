//! The conformance executor (`agent --a2a-conformance`): the scripted
//! behaviours the official A2A TCK drives by `messageId` prefix, on the
//! same task store (conversations) and the same protocol and streaming
//! code as the real agent. Never for production: it answers without a
//! model.
//!
//! | prefix | behaviour |
//! | --- | --- |
//! | `tck-message-response` | a direct message, no task |
//! | `tck-complete-task` | completed, status message "Hello from TCK" |
//! | `tck-artifact-text` / `-file` / `-file-url` / `-data` | completed with that artifact |
//! | `tck-input-required` | input-required |
//! | `tck-reject-task` | failed ("rejected") |
//! | `tck-stream-*` | completed with the scenario's text artifact |
//! | `test-resubscribe-message-id` | working for 4 s, then completed |
//! | anything else | 1.0: completed ("Unhandled messageId prefix: …"); 0.3: a plain task left `working`, which the 0.3 TCK follows up and cancels |
//!
//! A follow-up message on a waiting task settles its request and is
//! handled by its own prefix. File and data artifacts live in memory
//! (`artifacts`), text ones are the conversation's answer.

use super::error::TaskError;
use super::executor::{Executor, Ran, view_of};
use super::plan::{Plan, load};
use super::run::create;
use crate::a2a::wire::{ArtifactView, Dialect, Incoming, MessageView, Part, Sender};
use crate::domain::BoxFuture;
use crate::domain::tools::CallContext;
use crate::engine::handle::Engine;
use crate::store::NewMessage;
use crate::store::approvals::NewApproval;
use app::models::{ApprovalStatus, ConversationStatus, EventKind, Role, ToolCall};
use serde_json::json;
use std::collections::{HashMap, HashSet};
use std::sync::Mutex;
use std::time::Duration;

/// How long `test-resubscribe-message-id` stays working.
const RESUBSCRIBE_WORK: Duration = Duration::from_secs(4);

/// What a message asks for.
#[derive(Clone, Debug, PartialEq)]
enum Behaviour {
    Message(String),
    Complete(String),
    Artifact(Part),
    InputRequired,
    Fail(String),
    SlowComplete,
    /// A plain task that stays `working` (the 0.3 TCK's quality tests
    /// follow it up and cancel it).
    Open,
}

fn behaviour(m: &Incoming) -> Behaviour {
    let id = m.message_id.clone().unwrap_or_default();
    let p = |prefix: &str| id.starts_with(prefix);
    let text = |t: &str| Behaviour::Artifact(Part::Text(t.into()));
    if p("tck-message-response") {
        Behaviour::Message("Direct message response".into())
    } else if p("tck-complete-task") {
        Behaviour::Complete("Hello from TCK".into())
    } else if p("tck-artifact-text") {
        text("Generated text content")
    } else if p("tck-artifact-file-url") {
        Behaviour::Artifact(Part::File {
            raw: None,
            url: Some("https://example.com/output.txt".into()),
            filename: "output.txt".into(),
            media_type: "text/plain".into(),
        })
    } else if p("tck-artifact-file") || p("tck-stream-artifact-file") {
        Behaviour::Artifact(Part::File {
            raw: Some("dGNr".into()),
            url: None,
            filename: "output.txt".into(),
            media_type: "text/plain".into(),
        })
    } else if p("tck-artifact-data") {
        Behaviour::Artifact(Part::Data(json!({"key": "value", "count": 42})))
    } else if p("tck-input-required") {
        Behaviour::InputRequired
    } else if p("tck-reject-task") {
        Behaviour::Fail("rejected".into())
    } else if p("tck-stream-001") {
        text("Stream hello from TCK")
    } else if p("tck-stream-003") {
        text("Stream task lifecycle")
    } else if p("tck-stream-ordering-001") {
        text("Ordered output")
    } else if p("tck-stream-artifact-text") || p("tck-stream-artifact-chunked") {
        text("Streamed text content")
    } else if p("tck-stream-002") {
        Behaviour::Complete("Stream completed".into())
    } else if p("test-resubscribe-message-id") {
        Behaviour::SlowComplete
    } else if m.dialect == Some(Dialect::V1) {
        Behaviour::Complete(format!("Unhandled messageId prefix: {id}"))
    } else {
        Behaviour::Open
    }
}

/// The TCK's scripted behaviours.
#[derive(Default)]
pub(crate) struct Conformance {
    /// Non-text artifacts by task.
    artifacts: Mutex<HashMap<String, Vec<ArtifactView>>>,
    /// Tasks left `working` ([`Behaviour::Open`]).
    open: Mutex<HashSet<String>>,
}

impl Conformance {
    /// Acts out `m`'s behaviour on task `id`: the user's message is
    /// recorded (settling a waiting request), then the behaviour's step.
    async fn act(&self, engine: &Engine, id: &str, m: &Incoming) -> Result<Ran, TaskError> {
        let b = behaviour(m);
        if let Behaviour::Message(text) = &b {
            return Ok(Ran::Message(MessageView {
                id: crate::domain::ids::new_id(),
                role: Sender::Agent,
                parts: vec![Part::Text(text.clone())],
                task_id: None,
                context_id: m.context_id.clone(),
            }));
        }
        record_user(engine, id, m).await?;
        match b {
            // Answered above, without a task.
            Behaviour::Message(_) => {}
            Behaviour::Complete(text) => self.complete(engine, id, &text).await?,
            Behaviour::Artifact(part) => self.artifact(engine, id, part).await?,
            Behaviour::InputRequired => input_required(engine, id).await?,
            Behaviour::Fail(text) => fail(engine, id, text).await?,
            Behaviour::Open => {
                self.open
                    .lock()
                    .unwrap_or_else(|p| p.into_inner())
                    .insert(id.to_string());
                emit(engine, id);
            }
            Behaviour::SlowComplete => {
                // Working while the conversation is held, then done.
                let guard = engine.hold(id);
                emit(engine, id);
                tokio::time::sleep(RESUBSCRIBE_WORK).await;
                drop(guard);
                self.complete(engine, id, "Resubscribe scenario done")
                    .await?;
            }
        }
        Ok(Ran::Task(Box::new(load(engine, id).await?)))
    }

    /// Completes with `part` as the artifact (a text one is the answer;
    /// others are kept here, the answer says one is attached).
    async fn artifact(&self, engine: &Engine, id: &str, part: Part) -> Result<(), TaskError> {
        let answer = match &part {
            Part::Text(t) => t.clone(),
            _ => "Artifact attached".to_string(),
        };
        if !matches!(part, Part::Text(_)) {
            self.artifacts
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .insert(
                    id.to_string(),
                    vec![ArtifactView {
                        id: format!("artifact-{id}"),
                        name: "artifact".into(),
                        parts: vec![part],
                    }],
                );
        }
        self.complete(engine, id, &answer).await
    }

    async fn complete(&self, engine: &Engine, id: &str, text: &str) -> Result<(), TaskError> {
        let (cid, answer) = (id.to_string(), text.to_string());
        write(engine, move |tx| {
            tx.append(&cid, NewMessage::text(Role::Assistant, answer))
                .map(|_| ())
        })
        .await?;
        emit(engine, id);
        Ok(())
    }
}

/// Records the user's message on task `id`; a waiting request is settled
/// by it.
async fn record_user(engine: &Engine, id: &str, m: &Incoming) -> Result<(), TaskError> {
    let user = m.text.clone();
    let client_id = m.message_id.clone();
    let cid = id.to_string();
    write(engine, move |tx| {
        for a in tx.approvals_of(&cid, ApprovalStatus::Pending)? {
            tx.transition(
                &a.approval.uuid,
                &[ApprovalStatus::Pending],
                ApprovalStatus::Executed,
                None,
                None,
            )?;
            tx.set_result(&a.message_id, "answered", false)?;
        }
        tx.append(
            &cid,
            NewMessage::user(if user.is_empty() { "(no text)" } else { &user }, client_id),
        )?;
        tx.set_status(&cid, ConversationStatus::Active)
    })
    .await?;
    Ok(())
}

/// Leaves task `id` waiting for input: a call of `tck_input` and its
/// pending approval.
async fn input_required(engine: &Engine, id: &str) -> Result<(), TaskError> {
    let cid = id.to_string();
    write(engine, move |tx| {
        let call = tx
            .append(
                &cid,
                NewMessage {
                    tool_call: Some(ToolCall {
                        name: "tck_input".into(),
                        arguments: json!({}),
                        ..Default::default()
                    }),
                    ..NewMessage::text(Role::Tool, "")
                },
            )?
            .ok_or_else(|| crate::store::StoreError::Corrupt("task vanished".into()))?;
        tx.insert_approval(NewApproval {
            conversation_id: cid.clone(),
            message_id: call.id,
            tool_name: "tck_input".into(),
            server: None,
            tool_args: json!({}),
            description: "The TCK asks for more input".into(),
            remote: None,
            traceparent: None,
            rule: None,
            approvers: Vec::new(),
            quorum: 1,
            expires_in: None,
        })?;
        tx.set_status(&cid, ConversationStatus::WaitingApproval)
    })
    .await?;
    emit(engine, id);
    Ok(())
}

/// Fails task `id` with `note` as its reason.
async fn fail(engine: &Engine, id: &str, note: String) -> Result<(), TaskError> {
    let cid = id.to_string();
    write(engine, move |tx| {
        tx.append(&cid, NewMessage::text(Role::System, note))?;
        tx.set_status(&cid, ConversationStatus::Failed)
    })
    .await?;
    emit(engine, id);
    Ok(())
}

async fn write<T: Send + 'static>(
    engine: &Engine,
    f: impl FnOnce(&dyn crate::store::Tx) -> Result<T, crate::store::StoreError> + Send + 'static,
) -> Result<T, TaskError> {
    Ok(engine.store().write_raw(f).await?)
}

fn emit(engine: &Engine, id: &str) {
    engine
        .events()
        .emit(EventKind::StatusChanged, id, |e| e.running = Some(false));
}

impl Executor for Conformance {
    fn plan<'a>(
        &'a self,
        engine: &'a Engine,
        m: &'a Incoming,
        _d: Dialect,
    ) -> BoxFuture<'a, Result<Plan, TaskError>> {
        Box::pin(async move {
            match &m.task_id {
                Some(t) => {
                    let c = load(engine, t).await?;
                    let st = view_of(engine, self, &c, Some(0)).state;
                    if st.is_terminal() {
                        return Err(TaskError::Unsupported(format!(
                            "task {t:?} is {} and takes no more messages",
                            st.wire(Dialect::V03)
                        )));
                    }
                    Ok(Plan::Turn {
                        id: t.clone(),
                        m: m.clone(),
                    })
                }
                None => Ok(Plan::New(m.clone())),
            }
        })
    }

    fn run<'a>(
        &'a self,
        engine: &'a Engine,
        plan: Plan,
        ctx: CallContext,
    ) -> BoxFuture<'a, Result<Ran, TaskError>> {
        Box::pin(async move {
            match plan {
                Plan::New(m) => {
                    if let Behaviour::Message(_) = behaviour(&m) {
                        return self.act(engine, "", &m).await;
                    }
                    let id = create(engine, &m, &ctx).await?;
                    self.act(engine, &id, &m).await
                }
                Plan::Turn { id, m } => self.act(engine, &id, &m).await,
                Plan::Decide { id, .. } | Plan::Answer { id, .. } => {
                    let m = Incoming::default();
                    self.act(engine, &id, &m).await
                }
            }
        })
    }

    fn open(&self, task_id: &str) -> bool {
        self.open
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(task_id)
    }

    fn artifacts(&self, task_id: &str) -> Option<Vec<ArtifactView>> {
        self.artifacts
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .get(task_id)
            .cloned()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn msg(id: &str, d: Dialect) -> Incoming {
        Incoming {
            dialect: Some(d),
            message_id: Some(id.into()),
            text: "hi".into(),
            ..Default::default()
        }
    }

    #[test]
    fn prefixes_pick_behaviours_longest_first() {
        assert_eq!(
            behaviour(&msg("tck-complete-task-ab12-jsonrpc", Dialect::V1)),
            Behaviour::Complete("Hello from TCK".into())
        );
        assert!(matches!(
            behaviour(&msg("tck-artifact-file-url-1", Dialect::V1)),
            Behaviour::Artifact(Part::File { url: Some(_), .. })
        ));
        assert!(matches!(
            behaviour(&msg("tck-artifact-file-1", Dialect::V1)),
            Behaviour::Artifact(Part::File { raw: Some(_), .. })
        ));
        assert_eq!(behaviour(&msg("other", Dialect::V03)), Behaviour::Open);
        assert!(matches!(
            behaviour(&msg("other", Dialect::V1)),
            Behaviour::Complete(_)
        ));
    }
}
