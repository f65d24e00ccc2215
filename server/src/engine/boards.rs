//! The engine's in-memory copies of the store's trust records: the card
//! pins of sub-agents (`calls/cards.rs` keeps them current) and the tool
//! pins (`calls/pins.rs`). They are fields of the engine's handle, so they
//! live in a file of their own that the handle and the call files both
//! import, instead of the handle importing the call files that use it.

use crate::store::card_pins::CardPinRow;
use serde_json::Value;
use std::collections::HashMap;
use std::sync::RwLock;

/// The card pins as last read from the store, by agent name.
#[derive(Default)]
pub(crate) struct CardBoard {
    pub(in crate::engine) map: RwLock<HashMap<String, CardPinRow>>,
}

/// The pins as last read from the store, by (server, tool).
#[derive(Default)]
pub(crate) struct PinBoard {
    pub(in crate::engine) map: RwLock<HashMap<(String, String), PinnedTool>>,
}

#[derive(Clone, Debug)]
pub(in crate::engine) struct PinnedTool {
    pub(in crate::engine) digest: String,
    pub(in crate::engine) definition: Value,
    pub(in crate::engine) pinned_at: String,
    /// A changed definition waiting for an admin: (digest, JSON, when).
    pub(in crate::engine) changed: Option<(String, Value, String)>,
}
