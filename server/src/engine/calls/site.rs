//! The call being handled and where: its conversation, its message, the
//! call as the model made it, the scope it runs in and who is acting. One
//! value handed from state to state instead of six arguments.

use crate::domain::tools::CallContext;
use crate::engine::scope::{LocalAction, Scope};
use app::models::ToolCall;

/// One unanswered call, in its place.
#[derive(Clone, Copy)]
pub(crate) struct CallSite<'a> {
    pub(crate) conversation_id: &'a str,
    /// The id of the call's message.
    pub(crate) message_id: &'a str,
    /// The call as the model made it.
    pub(crate) tc: &'a ToolCall,
    pub(crate) scope: &'a Scope,
    pub(crate) ctx: &'a CallContext,
}

/// The sub-agent a call goes to.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Target<'a> {
    pub(crate) agent: &'a str,
    pub(crate) url: &'a str,
}

impl<'a> CallSite<'a> {
    /// The sub-agent this call delegates to, when it is a call to one
    /// (an `a2a_<name>` tool of the scope).
    pub(crate) fn target(&self) -> Option<Target<'a>> {
        match &self.scope.local_tool(&self.tc.name)?.action {
            LocalAction::A2a { agent, url } => Some(Target { agent, url }),
            LocalAction::ExitLoop => None,
        }
    }
}
