//! A card read from a sub-agent whose key is pinned, with its content
//! digest: what discovery hands over once verified, what an error holds
//! for an admin to accept. Its own file because discovery, the client's
//! error and the engine's port all name it.

use serde_json::Value;

/// A card read from a sub-agent whose key is pinned, with the digest of
/// its content (the card without `signatures`, canonical JSON): what an
/// admin accepts, and what the engine pins.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct ReadCard {
    pub(crate) digest: String,
    pub(crate) card: Value,
}

impl ReadCard {
    pub(super) fn of(card: &Value) -> ReadCard {
        let mut content = card.clone();
        if let Some(o) = content.as_object_mut() {
            o.remove("signatures");
        }
        ReadCard {
            digest: crate::domain::digest::digest(&content),
            card: card.clone(),
        }
    }
}
