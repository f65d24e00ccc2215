//! A task as its conversation stands: the task id and context id are the
//! conversation id, so REST and A2A see one state (an approval given over
//! REST completes the A2A task, and the other way round).
//!
//! A conversation maps to a task state: a running turn is `working`, a
//! pending approval `input-required` (its status message carries a data
//! part `{approval_uuid, tool, arguments, description, chain}`), a
//! finished turn `completed` (the answer is an artifact), `failed`,
//! `canceled`.

use crate::a2a::wire::{ArtifactView, MessageView, Part, Sender, TaskState, TaskView};
use app::models::{Conversation, ConversationStatus, Message, Role};
use serde_json::json;

/// A task's state from its conversation's status, whether a turn is
/// running, and whether its last user/assistant message is an answer
/// (`None`: it has none).
pub(crate) fn task_state(
    status: ConversationStatus,
    busy: bool,
    answered: Option<bool>,
) -> TaskState {
    // A question on a live MCP session waits inside the running turn.
    if status == ConversationStatus::WaitingInput {
        return TaskState::InputRequired;
    }
    if busy {
        return TaskState::Working;
    }
    match (status, answered) {
        (ConversationStatus::WaitingApproval, _) => TaskState::InputRequired,
        (ConversationStatus::Failed, _) => TaskState::Failed,
        (ConversationStatus::Cancelled, _) => TaskState::Canceled,
        (_, None) => TaskState::Submitted,
        (_, Some(true)) => TaskState::Completed,
        // The turn ended without an answer (interrupted by a restart).
        (_, Some(false)) => TaskState::Failed,
    }
}

/// How the `task_state` column names a state (the stored rule above).
pub(crate) fn stored_state(s: TaskState) -> &'static str {
    match s {
        TaskState::Submitted => "submitted",
        TaskState::Working => "working",
        TaskState::InputRequired => "input-required",
        TaskState::Completed => "completed",
        TaskState::Failed => "failed",
        TaskState::Canceled => "canceled",
    }
}

/// The task view of a conversation. `history`: keep the last N messages.
pub(crate) fn view(c: &Conversation, busy: bool, history: Option<usize>) -> TaskView {
    let talk: Vec<&Message> = c
        .messages
        .iter()
        .filter(|m| matches!(m.role, Role::User | Role::Assistant) && !m.content.is_empty())
        .collect();
    let last_answer = talk.last().filter(|m| m.role == Role::Assistant).copied();
    let answered = talk.last().map(|m| m.role == Role::Assistant);
    let state = task_state(c.status, busy, answered);
    let artifacts = match (&state, last_answer) {
        (TaskState::Completed, Some(m)) => vec![ArtifactView {
            id: format!("answer-{}", m.id),
            name: "answer".into(),
            parts: vec![Part::Text(m.content.clone())],
        }],
        _ => Vec::new(),
    };
    TaskView {
        id: c.id.clone(),
        context_id: context_of(c),
        state,
        status_message: status_message(c, state, last_answer),
        timestamp: c.updated_at.clone(),
        history: history_of(c, &talk, history),
        artifacts,
    }
}

/// A message from the agent on task `c`.
fn agent(c: &Conversation, parts: Vec<Part>, id: String) -> MessageView {
    MessageView {
        id,
        role: Sender::Agent,
        parts,
        task_id: Some(c.id.clone()),
        context_id: Some(context_of(c)),
    }
}

/// What the task's status says in words: the approval or question it
/// waits on, its answer, or why it failed or was canceled.
fn status_message(
    c: &Conversation,
    state: TaskState,
    last_answer: Option<&Message>,
) -> Option<MessageView> {
    match state {
        TaskState::InputRequired => approval_message(c).or_else(|| question_message(c)),
        TaskState::Completed => last_answer.map(|m| {
            agent(
                c,
                vec![Part::Text(m.content.clone())],
                format!("{}-status", m.id),
            )
        }),
        TaskState::Failed | TaskState::Canceled => c
            .messages
            .iter()
            .rev()
            .find(|m| m.role == Role::System)
            .map(|m| {
                agent(
                    c,
                    vec![Part::Text(m.content.clone())],
                    format!("{}-note", c.id),
                )
            }),
        _ => None,
    }
}

/// The pending approval as a status message: its words and a data part
/// `{approval_uuid, tool, arguments, description, chain}`.
fn approval_message(c: &Conversation) -> Option<MessageView> {
    let a = c.pending_approval.as_ref()?;
    Some(agent(
        c,
        vec![
            Part::Text(format!("Approval needed: {}", a.description)),
            Part::Data(json!({
                "approval_uuid": a.uuid,
                "tool": a.tool_name,
                "arguments": a.tool_args,
                "description": a.description,
                "chain": a.chain.clone().unwrap_or_default(),
            })),
        ],
        format!("{}-approval", a.uuid),
    ))
}

/// A tool's question (QUESTIONS.md §4) as a status message: answered with
/// a data part `{"question_answer": {uuid, action, content}}`.
fn question_message(c: &Conversation) -> Option<MessageView> {
    let q = c.pending_question.as_ref()?;
    let mut facts = json!({
        "uuid": q.uuid,
        "kind": q.kind,
        "message": q.message,
        "tool": q.tool_call.tool,
        "chain": q.chain,
    });
    if let Some(s) = &q.schema {
        facts["schema"] = s.clone();
    }
    if let Some(u) = &q.url {
        facts["url"] = u.clone().into();
    }
    Some(agent(
        c,
        vec![
            Part::Text(format!("`{}` asks: {}", q.tool_call.tool, q.message)),
            Part::Data(json!({ "question": facts })),
        ],
        format!("{}-question", q.uuid),
    ))
}

/// The user's and the agent's messages, the last `keep` of them.
fn history_of(c: &Conversation, talk: &[&Message], keep: Option<usize>) -> Vec<MessageView> {
    let mut out: Vec<MessageView> = talk
        .iter()
        .map(|m| MessageView {
            id: m.client_id.clone().unwrap_or_else(|| m.id.clone()),
            role: if m.role == Role::User {
                Sender::User
            } else {
                Sender::Agent
            },
            parts: vec![Part::Text(m.content.clone())],
            task_id: Some(c.id.clone()),
            context_id: Some(context_of(c)),
        })
        .collect();
    if let Some(n) = keep {
        let skip = out.len().saturating_sub(n);
        out.drain(..skip);
    }
    out
}

/// The task's context id: the one its client chose, else the task id.
pub(crate) fn context_of(c: &Conversation) -> String {
    c.context_id.clone().unwrap_or_else(|| c.id.clone())
}
