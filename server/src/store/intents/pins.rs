//! Tool pins' intents: read the pins, record a tool definition the agent
//! listed, accept a changed one (the rules are in `store/pins.rs`).

use crate::domain::ids::now;
use crate::store::audit::Event;
use crate::store::error::StoreError;
use crate::store::facade::Store;
use crate::store::outbox::announce_tool;
use crate::store::pins::{Acceptance, Observed, PinRow};

impl Store {
    /// Every pin.
    pub(crate) async fn pins(&self) -> Result<Vec<PinRow>, StoreError> {
        self.read(|tx| tx.pins()).await
    }

    /// Records what a server presents for `tool` now (`definition`: JSON,
    /// `digest`: its hash): pinned the first time, a change when it
    /// differs from the pin (`tool.changed` audited once per new
    /// definition), cleared when it is the pin again.
    pub(crate) async fn observe_tool(
        &self,
        server: &str,
        tool: &str,
        digest: &str,
        definition: &str,
    ) -> Result<Observed, StoreError> {
        let (server, tool, digest, definition) = (
            server.to_string(),
            tool.to_string(),
            digest.to_string(),
            definition.to_string(),
        );
        let routes = self.notify_routes.clone();
        self.write(move |tx| {
            let Some(pin) = tx.pin(&server, &tool)? else {
                tx.insert_pin(&PinRow {
                    server,
                    tool,
                    digest,
                    definition,
                    pinned_at: now(),
                    changed: None,
                })?;
                return Ok(Observed::Pinned);
            };
            if pin.digest == digest {
                if pin.changed.is_some() {
                    tx.set_pin_change(&server, &tool, None)?;
                    return Ok(Observed::Reverted);
                }
                return Ok(Observed::Same);
            }
            if pin.changed.as_ref().is_some_and(|(d, _, _)| *d == digest) {
                return Ok(Observed::Changed { first: false });
            }
            tx.set_pin_change(&server, &tool, Some((&digest, &definition, &now())))?;
            tx.audit(&Event {
                actor: "agent",
                event: "tool.changed",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({
                    "server": server,
                    "tool": tool,
                    "pinned_digest": pin.digest,
                    "new_digest": digest,
                }),
            })?;
            announce_tool(
                tx,
                &routes,
                serde_json::json!({
                    "server": server,
                    "name": tool,
                    "pinned_digest": pin.digest,
                    "new_digest": digest,
                    "pinned": serde_json::from_str::<serde_json::Value>(&pin.definition).unwrap_or_default(),
                    "changed": serde_json::from_str::<serde_json::Value>(&definition).unwrap_or_default(),
                }),
            )?;
            Ok(Observed::Changed { first: true })
        })
        .await
    }

    /// Accepts the changed definition of `tool` (`tool.accepted` by `by`),
    /// when it is the one of digest `expected` (if given).
    pub(crate) async fn accept_tool(
        &self,
        server: &str,
        tool: &str,
        by: &str,
        expected: Option<&str>,
    ) -> Result<Acceptance, StoreError> {
        let (server, tool, by) = (server.to_string(), tool.to_string(), by.to_string());
        let expected = expected.map(str::to_string);
        self.write(move |tx| {
            let Some(pin) = tx.pin(&server, &tool)? else {
                return Ok(Acceptance::Nothing);
            };
            let Some((digest, _, _)) = pin.changed else {
                return Ok(Acceptance::Nothing);
            };
            if expected.as_ref().is_some_and(|e| *e != digest) {
                return Ok(Acceptance::Moved(digest));
            }
            if !tx.accept_pin(&server, &tool)? {
                return Ok(Acceptance::Nothing);
            }
            tx.audit(&Event {
                actor: &by,
                event: "tool.accepted",
                conversation_id: None,
                approval_uuid: None,
                details: serde_json::json!({
                    "server": server,
                    "tool": tool,
                    "previous_digest": pin.digest,
                    "digest": digest,
                }),
            })?;
            Ok(Acceptance::Accepted)
        })
        .await
    }
}
