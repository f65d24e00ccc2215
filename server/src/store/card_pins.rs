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

use super::audit::Event;
use super::pins::Acceptance;
use super::{Store, StoreError, now};

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
    pub(in crate::store) fn of(
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

pub(in crate::store) const CARD_PIN_COLUMNS: &str =
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

impl Store {
    /// Every card pin.
    pub(crate) async fn card_pins(&self) -> Result<Vec<CardPinRow>, StoreError> {
        self.read(|tx| tx.card_pins()).await
    }

    /// Records a card the agent read (see the module docs).
    pub(crate) async fn observe_card(&self, seen: SeenCard<'_>) -> Result<CardSeen, StoreError> {
        let (agent, url, digest, card) = (
            seen.agent.to_string(),
            seen.url.to_string(),
            seen.digest.to_string(),
            seen.card.to_string(),
        );
        let untrusted = seen.untrusted.map(str::to_string);
        self.write(move |tx| {
            let old = tx.card_pin(&agent)?;
            let mut row = old.clone().unwrap_or_else(|| CardPinRow {
                agent: agent.clone(),
                ..CardPinRow::default()
            });
            row.url = url.clone();
            let pinned = row.digest.as_deref() == Some(digest.as_str());
            let Some(reason) = untrusted else {
                // Verified: this card is the pin now, and nothing is held.
                if pinned && row.held.is_none() {
                    return Ok(CardSeen::Trusted);
                }
                if !pinned {
                    (row.digest, row.card) = (Some(digest), Some(card));
                    (row.pinned_at, row.pinned_by) = (Some(now()), None);
                }
                row.held = None;
                tx.put_card_pin(&row)?;
                return Ok(CardSeen::Trusted);
            };
            if pinned && row.pinned_by.is_some() {
                // The card an admin accepted (here or on another replica).
                if row.held.take().is_some() {
                    tx.put_card_pin(&row)?;
                }
                return Ok(CardSeen::Trusted);
            }
            if let Some(h) = row.held.as_mut().filter(|h| h.digest == digest) {
                if h.reason != reason {
                    h.reason = reason;
                    tx.put_card_pin(&row)?;
                }
                return Ok(CardSeen::Held { first: false });
            }
            row.held = Some(HeldCard {
                digest: digest.clone(),
                card,
                reason: reason.clone(),
                at: now(),
            });
            tx.put_card_pin(&row)?;
            tx.audit(&Event {
                actor: "agent",
                event: "a2a.card_untrusted",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({
                    "agent": agent,
                    "url": url,
                    "reason": reason,
                    "digest": digest,
                    "trusted_digest": row.digest,
                }),
            })?;
            Ok(CardSeen::Held { first: true })
        })
        .await
    }

    /// Accepts the held card of `agent` (`a2a.card_accepted` by `by`),
    /// when it is the one of digest `expected` (if given): it becomes the
    /// pin.
    pub(crate) async fn accept_card(
        &self,
        agent: &str,
        by: &str,
        expected: Option<&str>,
    ) -> Result<Acceptance, StoreError> {
        let (agent, by) = (agent.to_string(), by.to_string());
        let expected = expected.map(str::to_string);
        self.write(move |tx| {
            let Some(mut row) = tx.card_pin(&agent)? else {
                return Ok(Acceptance::Nothing);
            };
            let Some(held) = row.held.take() else {
                return Ok(Acceptance::Nothing);
            };
            if expected.as_ref().is_some_and(|e| *e != held.digest) {
                return Ok(Acceptance::Moved(held.digest));
            }
            let previous = row.digest.replace(held.digest.clone());
            row.card = Some(held.card);
            (row.pinned_at, row.pinned_by) = (Some(now()), Some(by.clone()));
            tx.put_card_pin(&row)?;
            tx.audit(&Event {
                actor: &by,
                event: "a2a.card_accepted",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({
                    "agent": agent,
                    "url": row.url,
                    "previous_digest": previous,
                    "digest": held.digest,
                    "reason": held.reason,
                }),
            })?;
            Ok(Acceptance::Accepted)
        })
        .await
    }
}
