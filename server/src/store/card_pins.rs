//! Agent Card pins: what the agent last trusted of each sub-agent whose
//! signing key is pinned (`a2a[].trust`), and a card it holds.
//!
//! A card whose signature verifies becomes the pin silently (the key is
//! the trust). A card that cannot be trusted (no signature by a pinned
//! key, tampered, unsigned) is recorded beside the pin as held
//! (`a2a.card_untrusted`, audited once per card), and delegation to the
//! agent waits until the card verifies again or an admin accepts the held
//! card (`a2a.card_accepted`): it then becomes the pin with `pinned_by`
//! set, and that exact card (by the digest of its content) is trusted
//! from then on, as an accepted tool definition is. Each step is one
//! transaction with its audit row.

/// One sub-agent's pin.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct CardPinRow {
    pub(crate) agent: String,
    pub(crate) url: String,
    /// The digest of the card last trusted (none yet: `None`).
    pub(crate) digest: Option<String>,
    /// That card, as JSON.
    pub(crate) card: Option<String>,
    pub(crate) pinned_at: Option<String>,
    /// The admin who accepted it; `None` when its signature verified.
    pub(crate) pinned_by: Option<String>,
    /// A card held because it cannot be trusted.
    pub(crate) held: Option<HeldCard>,
}

/// A card waiting for an admin.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct HeldCard {
    pub(crate) digest: String,
    /// The card, as JSON.
    pub(crate) card: String,
    /// Why it cannot be trusted.
    pub(crate) reason: String,
    pub(crate) at: String,
}

impl HeldCard {
    /// The held card of a row's four `held_*` columns (all set, or none).
    pub(super) fn of(
        digest: Option<String>,
        card: Option<String>,
        reason: Option<String>,
        at: Option<String>,
    ) -> Option<HeldCard> {
        Some(HeldCard {
            digest: digest?,
            card: card?,
            reason: reason?,
            at: at?,
        })
    }
}

pub(super) const CARD_PIN_COLUMNS: &str =
    "agent, url, digest, card, pinned_at, pinned_by, held_digest, held_card, held_reason, held_at";

/// What seeing a card did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum CardSeen {
    /// Trusted: it verified, or it is the card an admin accepted.
    Trusted,
    /// Held (`first`: just now, audited).
    Held { first: bool },
}

/// A card the agent read: whose, where, its digest and JSON, and why it
/// cannot be trusted (`None`: its signature verified).
pub(crate) struct SeenCard<'a> {
    pub(crate) agent: &'a str,
    pub(crate) url: &'a str,
    pub(crate) digest: &'a str,
    pub(crate) card: &'a str,
    pub(crate) untrusted: Option<&'a str>,
}
