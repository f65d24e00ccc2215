//! The models of a question a tool asks the human (QUESTIONS.md §2): the
//! question as REST, the UI and A2A show it, an answer as posted, a page
//! of pending ones.

use serde::{Deserialize, Serialize};
use serde_json::Value;

/// What a question asks for (QUESTIONS.md §2).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QuestionKind {
    /// Fields to fill in, described by `schema`.
    Form,
    /// A page to visit (`url`).
    Url,
}

/// Where a question stands.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(rename_all = "snake_case")]
pub enum QuestionStatus {
    Pending,
    Answered,
    Declined,
    Cancelled,
    Expired,
}

impl QuestionStatus {
    pub const ALL: [QuestionStatus; 5] = [
        QuestionStatus::Pending,
        QuestionStatus::Answered,
        QuestionStatus::Declined,
        QuestionStatus::Cancelled,
        QuestionStatus::Expired,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            QuestionStatus::Pending => "pending",
            QuestionStatus::Answered => "answered",
            QuestionStatus::Declined => "declined",
            QuestionStatus::Cancelled => "cancelled",
            QuestionStatus::Expired => "expired",
        }
    }

    pub fn parse(s: &str) -> Option<Self> {
        Self::ALL.into_iter().find(|st| st.as_str() == s)
    }
}

/// The tool call a question belongs to.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct QuestionCall {
    pub tool: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub server: Option<String>,
    pub arguments: Value,
}

/// A question a tool asked the human (QUESTIONS.md §2).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct Question {
    pub uuid: String,
    pub conversation_id: String,
    pub tool_call: QuestionCall,
    pub kind: QuestionKind,
    pub message: String,
    /// `form`: the requested schema (a flat object of string, number,
    /// integer, boolean and enum properties).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema: Option<Value>,
    /// `url`: the page to visit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    pub status: QuestionStatus,
    pub asked_at: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_by: Option<String>,
    /// `ui`, `rest`, `a2a` or `link`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_via: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub answered_at: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub expires_at: Option<String>,
    /// The agents a question raised below us came through, nearest first.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub chain: Vec<String>,
    /// Who sent the conversation's latest message when it was asked.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub requested_by: Option<String>,
}

/// `POST /questions/:uuid`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields)]
pub struct AnswerQuestion {
    /// `accept`, `decline` or `cancel`.
    pub action: String,
    /// With `accept` on a form: the fields, checked against the schema.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub content: Option<serde_json::Map<String, Value>>,
}

/// `GET /questions`: one page of pending questions, oldest first.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[cfg_attr(feature = "ssr", derive(schemars::JsonSchema))]
pub struct QuestionPage {
    pub questions: Vec<Question>,
    pub total: u64,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_cursor: Option<String>,
}
