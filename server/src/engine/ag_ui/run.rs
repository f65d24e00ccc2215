//! What one AG-UI run asks for and what it found, in the engine's terms.

use crate::engine::mcp_endpoint::reply::Pause;
use app::models::{Conversation, ConversationStatus};
use std::collections::HashSet;

/// A run's request: the thread, the user messages the client holds (the
/// whole history, as AG-UI clients send it), its answers to interrupts.
#[derive(Clone, Debug, Default)]
pub(crate) struct RunRequest {
    pub(crate) thread_id: String,
    pub(crate) messages: Vec<UserInput>,
    pub(crate) resume: Vec<ResumeEntry>,
    /// Whether the caller may add messages (the role `requester`, when
    /// sign-in is on); resuming needs only the right to decide.
    pub(crate) may_send: bool,
}

/// One user message, by the client's id.
#[derive(Clone, Debug)]
pub(crate) struct UserInput {
    pub(crate) id: String,
    pub(crate) text: String,
}

/// The client's answer to one interrupt.
#[derive(Clone, Debug)]
pub(crate) struct ResumeEntry {
    pub(crate) interrupt_id: String,
    /// `status: "cancelled"`: rejected (an approval) or cancelled (a question).
    pub(crate) cancelled: bool,
    pub(crate) payload: Option<serde_json::Value>,
}

/// What the conversation held when the run began, so the edge shows only
/// what the run added: new messages, and results that arrived for calls
/// stored before (an approved call's result).
#[derive(Clone, Debug, Default)]
pub(crate) struct Seen {
    pub(crate) messages: HashSet<String>,
    pub(crate) results: HashSet<String>,
}

impl Seen {
    pub(crate) fn of(c: Option<&Conversation>) -> Seen {
        let mut seen = Seen::default();
        for m in c.map(|c| c.messages.as_slice()).unwrap_or_default() {
            seen.messages.insert(m.id.clone());
            if m.tool_call.as_ref().is_some_and(|t| t.result.is_some()) {
                seen.results.insert(m.id.clone());
            }
        }
        seen
    }

    /// Forgets what followed the call an interrupt the client answers
    /// held: its result and every later message. The client saw the run
    /// up to that interrupt, so a resume (first, replayed, or of an
    /// interrupt decided elsewhere meanwhile) streams the continuation.
    pub(crate) fn resume_from(&mut self, c: &Conversation, interrupt_id: &str) {
        let held = c.messages.iter().position(|m| {
            m.tool_call
                .as_ref()
                .and_then(|t| t.approval.as_ref())
                .is_some_and(|a| a.uuid == interrupt_id)
        });
        let Some(at) = held else {
            return;
        };
        self.results.remove(&c.messages[at].id);
        for m in &c.messages[at + 1..] {
            self.messages.remove(&m.id);
            self.results.remove(&m.id);
        }
    }
}

/// One open interrupt: what waits, and whether its arguments may be edited.
#[derive(Clone, Debug)]
pub(crate) struct Interrupt {
    pub(crate) pause: Pause,
    pub(crate) editable: bool,
}

impl Interrupt {
    /// The interrupt's id: the approval's or the question's uuid.
    pub(crate) fn id(&self) -> &str {
        match &self.pause {
            Pause::Approval(a) => &a.uuid,
            Pause::Question(q) => &q.uuid,
        }
    }
}

/// How the run ended, with the conversation as it stands.
#[derive(Clone, Debug)]
pub(crate) struct RunView {
    pub(crate) conversation: Conversation,
    pub(crate) seen: Seen,
    pub(crate) interrupts: Vec<Interrupt>,
}

/// What `c` waits on now, if anything.
pub(crate) fn pause_of(c: &Conversation) -> Option<Pause> {
    match (&c.pending_approval, &c.pending_question) {
        (Some(a), _) if c.status == ConversationStatus::WaitingApproval => {
            Some(Pause::Approval(Box::new(a.clone())))
        }
        (_, Some(q)) if c.status == ConversationStatus::WaitingInput => {
            Some(Pause::Question(Box::new(q.clone())))
        }
        _ => None,
    }
}
