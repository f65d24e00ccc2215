//! This replica's side of the leases table: its owner name, the lease
//! length, and the leases it holds (conversation → epoch), which the pool,
//! every transaction's fence and the heartbeat share.

use std::collections::HashMap;
use std::sync::Mutex;

/// This replica's side of the leases table.
pub(super) struct Leases {
    /// This replica's name in `leases.owner`: unique per process.
    pub(super) owner: String,
    /// `store.lease_seconds`.
    pub(super) seconds: f64,
    /// The leases this replica holds: conversation → epoch.
    held: Mutex<HashMap<String, i64>>,
}

impl Leases {
    pub(super) fn new(seconds: u32) -> Leases {
        Leases {
            owner: format!(
                "replica-{}-{:08x}",
                std::process::id(),
                rand::random::<u32>()
            ),
            seconds: f64::from(seconds.max(1)),
            held: Mutex::new(HashMap::new()),
        }
    }

    pub(super) fn held(&self) -> std::sync::MutexGuard<'_, HashMap<String, i64>> {
        self.held.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// The epoch under which this replica writes `conversation_id`, if it
    /// holds its lease.
    pub(super) fn epoch(&self, conversation_id: &str) -> Option<i64> {
        self.held().get(conversation_id).copied()
    }

    pub(super) fn adopt(&self, conversation_id: &str, epoch: i64) {
        self.held().insert(conversation_id.to_string(), epoch);
    }

    /// Stops renewing a lease (released, lost, or its turn ended).
    pub(super) fn forget(&self, conversation_id: &str, epoch: i64) {
        let mut held = self.held();
        if held.get(conversation_id) == Some(&epoch) {
            held.remove(conversation_id);
        }
    }
}
