//! The turns running in this process, each with a cancel switch.
//!
//! A cancel (A2A `CancelTask`) of a conversation whose turn is running
//! trips its switch: here directly, or, when another replica runs it,
//! through the flag that replica's heartbeat reads from its lease row
//! (`Store::request_cancel`). The turn sees it between steps and while it
//! waits for the model, stops, and frees the conversation; the canceller
//! then cancels what waits, as for an idle conversation.

use std::collections::HashMap;
use std::sync::Mutex;
use tokio_util::sync::CancellationToken;

#[derive(Default)]
pub(crate) struct RunningTurns {
    turns: Mutex<HashMap<String, CancellationToken>>,
}

impl RunningTurns {
    fn map(&self) -> std::sync::MutexGuard<'_, HashMap<String, CancellationToken>> {
        self.turns.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// Registers a turn that starts; its switch.
    pub(crate) fn start(&self, conversation_id: &str) -> CancellationToken {
        let token = CancellationToken::new();
        self.map()
            .insert(conversation_id.to_string(), token.clone());
        token
    }

    /// Unregisters a turn that ended (the conversation's lock, still
    /// held, means no other turn of it registered meanwhile).
    pub(crate) fn end(&self, conversation_id: &str) {
        self.map().remove(conversation_id);
    }

    /// The switch of the turn running `conversation_id` here; a fresh one
    /// (never tripped) when none runs.
    pub(crate) fn token(&self, conversation_id: &str) -> CancellationToken {
        self.map().get(conversation_id).cloned().unwrap_or_default()
    }

    /// Trips the switch of the turn running `conversation_id` here; false
    /// when none runs here.
    pub(crate) fn cancel(&self, conversation_id: &str) -> bool {
        match self.map().get(conversation_id) {
            Some(t) => {
                t.cancel();
                true
            }
            None => false,
        }
    }
}
