//! How a decision or an answer arrived: one [`Channel`] instead of free
//! text, so a new client (an MCP endpoint, AG-UI) is a variant the
//! compiler makes every `match` consider, not a string someone may
//! misspell.
//!
//! Key decision: the stored text (`decided_via`, `answered_via`,
//! `created_via`, a vote's and an audit row's `via`) is exactly today's,
//! from [`Channel::as_str`] and serde alike, so no row changes. Rows are
//! read back as the text they hold (an unknown value, say from a newer
//! replica, is shown as stored); `str::parse` says which channel a text
//! names, or [`UnknownChannel`] for one it does not know.

use serde::{Deserialize, Serialize};

/// How a decision or an answer came in (AUTH.md §5).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub(crate) enum Channel {
    /// The REST API (also the default of a context nobody set).
    #[default]
    #[serde(rename = "rest")]
    Rest,
    /// The web UI (a signed-in browser, or a client saying it is the UI).
    #[serde(rename = "ui")]
    Ui,
    /// Inbound A2A (JSON-RPC).
    #[serde(rename = "a2a")]
    A2a,
    /// A signed link (POLICY.md §5).
    #[serde(rename = "link")]
    Link,
    /// A button in a Slack message (REACH.md §2).
    #[serde(rename = "slack")]
    Slack,
    /// A standing grant approved the call (REACH.md §3).
    #[serde(rename = "grant")]
    Grant,
    /// An MCP client of the agent (coming).
    #[serde(rename = "mcp")]
    Mcp,
    /// An AG-UI client (coming).
    #[serde(rename = "ag-ui")]
    AgUi,
    /// The agent, because the turn or the task was cancelled.
    #[serde(rename = "cancel")]
    Cancel,
    /// The agent, because the question's time ran out.
    #[serde(rename = "expiry")]
    Expiry,
    /// The agent, because it restarted while a live session's question waited.
    #[serde(rename = "restart")]
    Restart,
}

impl Channel {
    /// Every channel, in declaration order.
    pub(crate) const ALL: [Channel; 11] = [
        Channel::Rest,
        Channel::Ui,
        Channel::A2a,
        Channel::Link,
        Channel::Slack,
        Channel::Grant,
        Channel::Mcp,
        Channel::AgUi,
        Channel::Cancel,
        Channel::Expiry,
        Channel::Restart,
    ];

    /// The text stored and shown for it.
    pub(crate) const fn as_str(self) -> &'static str {
        match self {
            Channel::Rest => "rest",
            Channel::Ui => "ui",
            Channel::A2a => "a2a",
            Channel::Link => "link",
            Channel::Slack => "slack",
            Channel::Grant => "grant",
            Channel::Mcp => "mcp",
            Channel::AgUi => "ag-ui",
            Channel::Cancel => "cancel",
            Channel::Expiry => "expiry",
            Channel::Restart => "restart",
        }
    }
}

/// A stored text that names no [`Channel`] (the row keeps and shows it
/// as it is).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0:?} is not a channel")]
pub(crate) struct UnknownChannel(pub(crate) String);

impl std::str::FromStr for Channel {
    type Err = UnknownChannel;

    /// The channel a stored text names.
    fn from_str(text: &str) -> Result<Channel, UnknownChannel> {
        Channel::ALL
            .into_iter()
            .find(|c| c.as_str() == text)
            .ok_or_else(|| UnknownChannel(text.to_string()))
    }
}

impl std::fmt::Display for Channel {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

#[cfg(test)]
mod tests {
    use super::Channel;

    #[test]
    fn every_channel_round_trips_through_its_text_and_serde() {
        for c in Channel::ALL {
            assert_eq!(c.as_str().parse::<Channel>(), Ok(c));
            let json = serde_json::to_value(c).expect("serializes");
            assert_eq!(json, serde_json::Value::String(c.as_str().into()));
            let back: Channel = serde_json::from_value(json).expect("deserializes");
            assert_eq!(back, c);
            assert_eq!(c.to_string(), c.as_str());
        }
    }

    #[test]
    fn the_stored_texts_are_todays() {
        let texts: Vec<_> = Channel::ALL.iter().map(|c| c.as_str()).collect();
        assert_eq!(
            texts,
            [
                "rest", "ui", "a2a", "link", "slack", "grant", "mcp", "ag-ui", "cancel", "expiry",
                "restart"
            ]
        );
        assert_eq!(Channel::default(), Channel::Rest);
    }

    #[test]
    fn an_unknown_stored_text_is_no_channel() {
        for text in ["fax", "", "REST", " rest"] {
            assert_eq!(
                text.parse::<Channel>(),
                Err(super::UnknownChannel(text.to_string()))
            );
        }
        assert!(serde_json::from_str::<Channel>("\"fax\"").is_err());
    }
}
