//! Tool pinning in the engine (POLICY.md §4): the pins are loaded at
//! startup and kept in memory, every MCP tool list is compared with them
//! at startup and every two seconds (which covers a restart, a reconnect
//! and `tools/list_changed`), and every call is checked against them in
//! the gate before the rules, so a definition that changed since it was
//! trusted never runs unnoticed, even between two comparisons.
//!
//! A changed tool is held until an admin accepts it; what a call does
//! meanwhile follows `approvals.on_tool_change` (`hold` refuses it with a
//! clear result, `approve` asks, `allow` accepts the change at once,
//! audited). A `destructiveHint` true → false change is always held.

use crate::config::OnToolChange;
use crate::domain::tools::ToolInfo;
use crate::engine::boards::PinnedTool;
use crate::engine::handle::Engine;
use crate::store::pins::Acceptance;
use serde_json::Value;
use std::time::Duration;

/// How often the tool lists are compared with the pins.
const EVERY: Duration = Duration::from_secs(2);

/// Whether a definition declares the tool destructive.
fn declared_destructive(def: &Value) -> bool {
    let a = &def["annotations"];
    a["readOnlyHint"] != Value::Bool(true) && a["destructiveHint"] == Value::Bool(true)
}

/// What the pins say about a tool as presented now.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum PinCheck {
    /// Pinned as presented, or not seen before (trusted on first use).
    Trusted,
    /// Different from the pin; `downgrade`: destructiveHint true → false.
    Changed { downgrade: bool },
}

impl Engine {
    /// Loads the pins, compares the tool lists now, then every two seconds.
    pub(crate) async fn start_pins(&self) {
        self.reload_pins().await;
        self.check_tools().await;
        let engine = self.clone();
        self.inner.tasks.spawn_background("tool pins", async move {
            let mut every = tokio::time::interval(EVERY);
            every.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            every.tick().await;
            loop {
                every.tick().await;
                engine.check_tools().await;
            }
        });
    }

    async fn reload_pins(&self) {
        match self.inner.store.pins().await {
            Ok(rows) => {
                let parse = |s: &str| serde_json::from_str::<Value>(s).unwrap_or(Value::Null);
                let map = rows
                    .into_iter()
                    .map(|p| {
                        let known = PinnedTool {
                            definition: parse(&p.definition),
                            digest: p.digest,
                            pinned_at: p.pinned_at,
                            changed: p.changed.map(|(d, j, at)| (d, parse(&j), at)),
                        };
                        ((p.server, p.tool), known)
                    })
                    .collect();
                *self
                    .inner
                    .pins
                    .map
                    .write()
                    .unwrap_or_else(|p| p.into_inner()) = map;
            }
            Err(e) => tracing::warn!(error = %e, "could not read the tool pins"),
        }
    }

    /// Compares every available MCP tool with its pin: pins what is new,
    /// records what changed (audited once), and with `on_tool_change:
    /// allow` accepts a change that is not a destructiveHint downgrade.
    pub(crate) async fn check_tools(&self) {
        let mut touched = false;
        for t in self.inner.tools.tools().into_iter().filter(|t| t.available) {
            let d = t.digest.clone();
            let key = (t.server.clone(), t.name.clone());
            let same = self
                .inner
                .pins
                .map
                .read()
                .unwrap_or_else(|p| p.into_inner())
                .get(&key)
                .is_some_and(|k| k.digest == d && k.changed.is_none());
            if same {
                continue;
            }
            let text = t.definition().to_string();
            let observed = self
                .inner
                .store
                .observe_tool(&t.server, &t.name, &d, &text)
                .await;
            touched = true;
            match observed {
                Ok(crate::store::pins::Observed::Changed { first }) => {
                    let downgrade =
                        matches!(self.pin_check(&t), PinCheck::Changed { downgrade: true });
                    if first {
                        tracing::warn!(server = %t.server, tool = %t.name, downgrade, "a tool's definition changed since it was pinned; held until an admin accepts it");
                    }
                    if self.inner.policy.on_tool_change == OnToolChange::Allow
                        && !downgrade
                        && let Err(e) = self
                            .inner
                            .store
                            .accept_tool(&t.server, &t.name, "agent", Some(&d))
                            .await
                    {
                        tracing::warn!(tool = %t.name, error = %e, "could not accept a changed tool");
                    }
                }
                Ok(_) => {}
                Err(e) => tracing::warn!(tool = %t.name, error = %e, "could not pin a tool"),
            }
        }
        if touched {
            self.reload_pins().await;
        }
    }

    /// The pin check of the gate (in memory, no I/O).
    pub(crate) fn pin_check(&self, t: &ToolInfo) -> PinCheck {
        let map = self
            .inner
            .pins
            .map
            .read()
            .unwrap_or_else(|p| p.into_inner());
        let Some(k) = map.get(&(t.server.clone(), t.name.clone())) else {
            return PinCheck::Trusted;
        };
        if t.digest == k.digest {
            return PinCheck::Trusted;
        }
        PinCheck::Changed {
            downgrade: declared_destructive(&k.definition) && !t.destructive,
        }
    }

    /// `GET /tools`' view of a tool's pin: status, and for a changed
    /// definition what changed (one line per JSON pointer).
    pub(crate) fn pin_view(&self, t: &ToolInfo) -> Option<app::models::ToolPin> {
        let map = self
            .inner
            .pins
            .map
            .read()
            .unwrap_or_else(|p| p.into_inner());
        let k = map.get(&(t.server.clone(), t.name.clone()))?;
        let changed = t.digest != k.digest;
        Some(app::models::ToolPin {
            status: if changed { "changed" } else { "pinned" }.into(),
            pinned_at: k.pinned_at.clone(),
            changed_at: k.changed.as_ref().map(|(_, _, at)| at.clone()),
            diff: if changed {
                super::edit::diff(&k.definition, &t.definition())
            } else {
                Vec::new()
            },
            downgrade: changed && declared_destructive(&k.definition) && !t.destructive,
            reason: None,
            accepted_by: None,
            digest: changed.then(|| t.digest.clone()),
        })
    }

    /// Accepts the changed definition of `tool` (an admin's decision), or
    /// the held card of the sub-agent an `a2a_<name>` tool calls; with
    /// `expected`, only when what waits has that digest (what the admin
    /// looked at). `NotFound` for an unknown tool.
    pub(crate) async fn accept_tool(
        &self,
        tool: &str,
        by: &str,
        expected: Option<&str>,
    ) -> Result<Acceptance, crate::engine::error::EngineError> {
        let Some(t) = self
            .inner
            .tools
            .tools()
            .into_iter()
            .find(|t| t.name == tool)
        else {
            if let Some(agent) = tool.strip_prefix("a2a_") {
                return self.accept_card(agent, by, expected).await;
            }
            return Err(crate::engine::error::EngineError::NotFound(format!(
                "no tool named {tool:?}"
            )));
        };
        // What the server presents now is what gets accepted.
        self.check_tools().await;
        let accepted = self
            .inner
            .store
            .accept_tool(&t.server, &t.name, by, expected)
            .await?;
        self.reload_pins().await;
        if accepted == Acceptance::Accepted {
            tracing::info!(server = %t.server, tool = %t.name, by, "a changed tool definition was accepted");
        }
        Ok(accepted)
    }
}
