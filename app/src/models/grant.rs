//! The models of a grant (REACH.md §3): an approval that lets later calls
//! of the same tool, with the same arguments where it says, run without
//! asking, for a while. REST lists them, the UI shows them on the tools
//! page, an approval's decision may ask for one.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// A live (or, once revoked or expired, a past) grant.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Grant {
    pub id: String,
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    /// `conversation` (that conversation only) or `agent` (every one).
    pub scope: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub conversation_id: Option<String>,
    /// The rule (or `annotation`) whose question the grant answers.
    pub rule: String,
    /// The JSON pointers whose values a later call must repeat; absent:
    /// every argument.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_pointers: Option<Vec<String>>,
    /// The approved values: pointer → value, or the whole arguments when
    /// `match` is absent.
    pub values: Value,
    /// Who granted it, and how (`rest`, `ui`, `slack`…).
    pub created_by: String,
    pub created_via: String,
    pub created_at: String,
    pub expires_at: String,
    /// The approval whose decision created it.
    pub approval_uuid: String,
    /// Calls it let run.
    pub uses: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_used_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub revoked_by: Option<String>,
}

/// `GET /grants`: the live grants, newest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct GrantList {
    pub grants: Vec<Grant>,
}

/// What a decision asks to grant: `{"scope", "for", "match"}`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct GrantRequest {
    /// `conversation` (the default) or `agent` (admins only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<String>,
    /// How long it lasts (`30m`, `1h`; default `1h`, at most `24h`).
    #[serde(rename = "for", default, skip_serializing_if = "Option::is_none")]
    pub duration: Option<String>,
    /// JSON pointers into the arguments that later calls must repeat;
    /// absent: every argument.
    #[serde(rename = "match", default, skip_serializing_if = "Option::is_none")]
    pub match_pointers: Option<Vec<String>>,
}
