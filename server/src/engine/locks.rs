//! One writer per conversation.
//!
//! Two layers: this process's set (so a second request here is answered
//! without a round trip), then the store's lease (so a second replica is
//! refused too: see `crate::store::leases`). A guard holds both.
//!
//! A turn, a new message and an approval decision for the same conversation
//! never run at once: the second gets HTTP 409 instead of waiting, because a
//! waiting request could act on a state that the first one just changed
//! (e.g. a second approval click). The guard is owned, so a turn spawned as
//! its own task keeps the conversation locked after the HTTP request that
//! started it has gone away. The set sits behind a std `Mutex` that is held
//! only to insert or remove one id, never across an `.await`.

use std::collections::HashSet;
use std::sync::{Arc, Mutex};

/// The set of conversations with a running writer.
#[derive(Clone, Default)]
pub(crate) struct ConversationLocks {
    busy: Arc<Mutex<HashSet<String>>>,
}

/// Held while a writer runs; releases the conversation on drop.
pub(crate) struct LockGuard {
    busy: Arc<Mutex<HashSet<String>>>,
    id: String,
    /// The store's lease, once claimed.
    lease: Option<crate::store::Lease>,
}

impl LockGuard {
    /// Adds the store's lease to this guard.
    pub(crate) fn with_lease(mut self, lease: crate::store::Lease) -> LockGuard {
        self.lease = Some(lease);
        self
    }

    /// Releases the lease (awaiting its write, so the next request on any
    /// replica can claim it), then the conversation here.
    pub(crate) async fn release(mut self) {
        if let Some(lease) = self.lease.take() {
            lease.release().await;
        }
    }
}

impl ConversationLocks {
    /// Takes the conversation, or `None` if another writer has it.
    pub(crate) fn try_lock(&self, id: &str) -> Option<LockGuard> {
        let mut busy = self.busy.lock().unwrap_or_else(|p| p.into_inner());
        if busy.insert(id.to_string()) {
            Some(LockGuard {
                busy: self.busy.clone(),
                id: id.to_string(),
                lease: None,
            })
        } else {
            None
        }
    }

    /// True if a writer holds the conversation.
    pub(crate) fn is_locked(&self, id: &str) -> bool {
        self.busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .contains(id)
    }
}

impl Drop for LockGuard {
    fn drop(&mut self) {
        self.busy
            .lock()
            .unwrap_or_else(|p| p.into_inner())
            .remove(&self.id);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_conversation_has_one_writer_until_the_guard_drops() {
        let locks = ConversationLocks::default();
        let g = locks.try_lock("a").unwrap();
        assert!(locks.try_lock("a").is_none());
        assert!(
            locks.try_lock("b").is_some(),
            "other conversations are independent"
        );
        drop(g);
        assert!(locks.try_lock("a").is_some());
    }
}
