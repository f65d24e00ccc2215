//! Trust in sub-agents' Agent Cards, in the engine: what the store's card
//! pins say (see `store::card_pins`), kept in memory for `GET /tools` and
//! handed to the A2A client as the cards an admin accepted.
//!
//! The client judges each card it reads (its signature against the keys
//! pinned in `a2a[].trust`); the engine records the verdict after every
//! read a call or the check below causes: a verified card becomes the pin,
//! a card that cannot be trusted is held (audited once per card) and the
//! call answers that delegation is held. An admin accepts a held card
//! (`POST /tools/a2a_<name>/accept`, as with a changed tool definition);
//! that exact card is then trusted. When another replica's admin accepted
//! it, the store says so and the call goes on here too.
//!
//! Cards are checked at startup and every minute (a card is read again
//! only when its `Cache-Control` lifetime is over), so a bad card is held
//! and audited before anyone calls the agent.

use crate::a2a::A2aError;
use crate::domain::tools::ToolInfo;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::store::card_pins::{CardSeen, SeenCard};
use crate::store::pins::Acceptance;
use serde_json::Value;
use std::time::Duration;

/// How often the pinned agents' cards are checked.
const EVERY: Duration = Duration::from_secs(60);

impl Engine {
    /// The sub-agents whose signing key is pinned: (name, URL).
    fn pinned_agents(&self) -> Vec<(String, String)> {
        self.inner
            .config
            .sub_agent_entries()
            .into_iter()
            .filter(|a| a.trust.is_some())
            .map(|a| (a.name.clone(), a.url.clone()))
            .collect()
    }

    /// Loads the card pins, then checks the pinned agents' cards now and
    /// every minute, in the background.
    pub(crate) async fn start_cards(&self) {
        let agents = self.pinned_agents();
        if agents.is_empty() {
            return;
        }
        self.reload_cards().await;
        let engine = self.clone();
        self.inner.tasks.spawn_background("card pins", async move {
            let mut every = tokio::time::interval(EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                every.tick().await;
                // What other replicas recorded or accepted meanwhile.
                engine.reload_cards().await;
                for (name, url) in &agents {
                    let read = engine.inner.a2a.check_card(url, "card-check").await;
                    engine.note_card(name, url, read.as_ref().err()).await;
                }
            }
        });
    }

    async fn reload_cards(&self) {
        let rows = match self.inner.store.card_pins().await {
            Ok(rows) => rows,
            Err(e) => {
                tracing::warn!(error = %e, "could not read the agent card pins");
                return;
            }
        };
        let accepted = rows
            .iter()
            .filter(|r| r.pinned_by.is_some())
            .filter_map(|r| Some((r.url.clone(), r.digest.clone()?)))
            .collect();
        self.inner.a2a.set_accepted(accepted);
        *self
            .inner
            .cards
            .map
            .write()
            .unwrap_or_else(|p| p.into_inner()) =
            rows.into_iter().map(|r| (r.agent.clone(), r)).collect();
    }

    /// Records what reading the card of `agent` (at `url`) showed: a card
    /// that verified, or `err`. True when the card just refused is one an
    /// admin accepted on another replica: the call may be tried again.
    pub(crate) async fn note_card(&self, agent: &str, url: &str, err: Option<&A2aError>) -> bool {
        let mut changed = false;
        if let Some(read) = self.inner.a2a.take_verified(url) {
            let known = self
                .inner
                .cards
                .map
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(agent)
                .is_some_and(|r| r.digest.as_ref() == Some(&read.digest) && r.held.is_none());
            if !known {
                changed |= self.observe(agent, url, &read, None).await.is_some();
            }
        }
        let mut retry = false;
        match err {
            Some(A2aError::Untrusted {
                reason,
                card: Some(read),
                ..
            }) => match self.observe(agent, url, read, Some(reason)).await {
                Some(CardSeen::Trusted) => (retry, changed) = (true, true),
                Some(CardSeen::Held { first }) => {
                    if first {
                        tracing::warn!(agent, %reason, "a sub-agent's card cannot be trusted; delegation is held until it verifies or an admin accepts it");
                    }
                    changed = true;
                }
                None => {}
            },
            // No card to judge (none served, its keys unavailable): audited
            // once per reason.
            Some(A2aError::Untrusted {
                reason,
                new: true,
                card: None,
            }) => {
                let details = serde_json::json!({"agent": agent, "url": url, "reason": reason});
                if let Err(e) = self
                    .inner
                    .store
                    .audit("agent".into(), "a2a.card_untrusted", details)
                    .await
                {
                    tracing::error!(error = %e, "could not record a2a.card_untrusted");
                }
            }
            _ => {}
        }
        if changed {
            self.reload_cards().await;
        }
        retry
    }

    async fn observe(
        &self,
        agent: &str,
        url: &str,
        read: &crate::a2a::discovery::ReadCard,
        untrusted: Option<&str>,
    ) -> Option<CardSeen> {
        let card = read.card.to_string();
        let seen = SeenCard {
            agent,
            url,
            digest: &read.digest,
            card: &card,
            untrusted,
        };
        match self.inner.store.observe_card(seen).await {
            Ok(seen) => Some(seen),
            Err(e) => {
                tracing::warn!(agent, error = %e, "could not record a sub-agent's card");
                None
            }
        }
    }

    /// `GET /tools`' view of a sub-agent tool's card pin: `pinned`, or
    /// `held` with why and what changed since the card last trusted.
    pub(crate) fn card_view(&self, t: &ToolInfo) -> Option<app::models::ToolPin> {
        if t.name != format!("a2a_{}", t.server)
            || !self.pinned_agents().iter().any(|(n, _)| *n == t.server)
        {
            return None;
        }
        let map = self
            .inner
            .cards
            .map
            .read()
            .unwrap_or_else(|p| p.into_inner());
        let r = map.get(&t.server)?;
        let parse = |s: &Option<String>| {
            s.as_deref()
                .and_then(|s| serde_json::from_str::<Value>(s).ok())
                .unwrap_or(Value::Null)
        };
        Some(app::models::ToolPin {
            status: if r.held.is_some() { "held" } else { "pinned" }.into(),
            pinned_at: r.pinned_at.clone().unwrap_or_default(),
            changed_at: r.held.as_ref().map(|h| h.at.clone()),
            diff: match &r.held {
                Some(h) if r.card.is_some() => {
                    super::edit::diff(&parse(&r.card), &parse(&Some(h.card.clone())))
                }
                _ => Vec::new(),
            },
            downgrade: false,
            reason: r.held.as_ref().map(|h| h.reason.clone()),
            accepted_by: r.pinned_by.clone(),
            digest: r.held.as_ref().map(|h| h.digest.clone()),
        })
    }

    /// Accepts the held card of the sub-agent `agent` (an admin's
    /// decision): the card as recorded when it was held (what `GET /tools`
    /// showed; the agent is not asked again, it is the party not trusted),
    /// with `expected` only when its digest is that. `NotFound` for an
    /// agent that is not configured.
    pub(crate) async fn accept_card(
        &self,
        agent: &str,
        by: &str,
        expected: Option<&str>,
    ) -> Result<Acceptance, EngineError> {
        if !self.pinned_agents().iter().any(|(n, _)| n == agent) {
            if self.sub_agent_url(agent).is_some() {
                return Ok(Acceptance::Nothing);
            }
            return Err(EngineError::NotFound(format!(
                "no tool named \"a2a_{agent}\""
            )));
        }
        let accepted = self.inner.store.accept_card(agent, by, expected).await?;
        self.reload_cards().await;
        if accepted == Acceptance::Accepted {
            tracing::info!(agent, by, "a sub-agent's held card was accepted");
        }
        Ok(accepted)
    }
}
