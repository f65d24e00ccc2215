//! Agent Card pins' intents: read the pins, record a card the agent read,
//! accept a held card (the rules are in `store/card_pins.rs`).

use crate::domain::ids::now;
use crate::store::audit::Event;
use crate::store::card_pins::{CardPinRow, CardSeen, HeldCard, SeenCard};
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::pins::Acceptance;

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
