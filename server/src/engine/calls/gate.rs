//! What happens to a call before it runs (POLICY.md §1): the first
//! `approvals:` rule that matches decides (run, ask, refuse); without one,
//! the tool's annotations do, as they always did. A `deny` holds in every
//! node kind, including `parallel` and `loop` nodes that otherwise run
//! destructive tools without asking; an `approve` rule asks there too (a
//! rule is an explicit instruction, an annotation is only a hint).

use super::site::CallSite;
use crate::domain::tools::ToolInfo;
use crate::engine::error::EngineError;
use crate::engine::handle::Engine;
use crate::engine::scope::Scope;
use crate::policy::Action;
use crate::store::DeniedCall;
use app::models::{EventKind, ToolCall};

/// The gate of one call.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Gate {
    /// Runs without asking.
    Run,
    /// Waits for an approval; `rule` is recorded on it.
    Ask {
        rule: String,
        /// Who may decide (`role:approver`, names); empty: any approver.
        approvers: Vec<String>,
        /// Distinct approvers needed.
        quorum: u32,
        /// How long it may wait (the rule's, else `approvals.expires_in`).
        expires_in: Option<std::time::Duration>,
    },
    /// Never runs; the model is told why.
    Deny { rule: String, reason: String },
    /// Would ask (`ask`), but a live grant lets it run (REACH.md §3); if
    /// the grant turns out to have ended when its use is recorded, `ask`
    /// stands.
    Granted {
        grant: std::sync::Arc<crate::policy::grants::LiveGrant>,
        ask: Box<Gate>,
    },
}

impl Engine {
    /// The gate of `tc` (`info`: the tool as listed) in `scope`, in
    /// conversation `conversation_id`: the rules' (or annotations') answer,
    /// then, where that is to ask one approver, a live grant's.
    pub(super) fn gate(
        &self,
        tc: &ToolCall,
        info: Option<&ToolInfo>,
        scope: &Scope,
        conversation_id: &str,
    ) -> Gate {
        let gate = self.rules_gate(tc, info, scope);
        let Gate::Ask {
            rule,
            approvers,
            quorum: 1,
            ..
        } = &gate
        else {
            return gate;
        };
        let auth_on = self.inner.config.auth.mode != crate::config::AuthMode::None;
        let found = self.inner.grants.find(
            (&tc.name, tc.server.as_deref(), conversation_id),
            &tc.arguments,
            rule,
            &crate::domain::ids::now(),
            |name, roles| {
                !auth_on || super::grants::admits(approvers, name, &self.roles_now(name, roles))
            },
        );
        match found {
            Some(grant) => Gate::Granted {
                grant,
                ask: Box::new(gate),
            },
            None => gate,
        }
    }

    /// The gate as the rules, the pins and the annotations say.
    fn rules_gate(&self, tc: &ToolCall, info: Option<&ToolInfo>, scope: &Scope) -> Gate {
        // The engine's own `exit_loop` is not a tool anyone guards.
        if info.is_some_and(|i| i.server == "engine") {
            return Gate::Run;
        }
        // A tool whose definition changed since it was pinned (§4): held
        // before any rule, so no rule can let a changed tool through.
        if let Some(i) = info
            && scope.local_tool(&tc.name).is_none()
            && let super::pins::PinCheck::Changed { downgrade } = self.pin_check(i)
        {
            let held = || Gate::Deny {
                rule: "tool-changed".into(),
                reason: format!(
                    "the definition of `{}` on `{}` changed since it was trusted{}; an admin must accept the change \
                     (/ui/tools, or POST /tools/{}/accept) before it runs",
                    tc.name,
                    i.server,
                    if downgrade {
                        " (it no longer says it is destructive)"
                    } else {
                        ""
                    },
                    tc.name
                ),
            };
            match (self.inner.policy.on_tool_change, downgrade) {
                (_, true) | (crate::config::OnToolChange::Hold, _) => return held(),
                (crate::config::OnToolChange::Approve, false) => {
                    return Gate::Ask {
                        rule: "tool-changed".into(),
                        approvers: Vec::new(),
                        quorum: 1,
                        expires_in: self.inner.policy.expires_in,
                    };
                }
                // Accepted by the next comparison (audited).
                (crate::config::OnToolChange::Allow, false) => {}
            }
        }
        let server = tc
            .server
            .as_deref()
            .or_else(|| info.map(|i| i.server.as_str()));
        if let Some(rule) = self.inner.policy.evaluate(&tc.name, server, &tc.arguments) {
            return match &rule.action {
                Action::Allow => Gate::Run,
                Action::Approve(ask) => Gate::Ask {
                    rule: rule.name.clone(),
                    approvers: ask.approvers.iter().map(ToString::to_string).collect(),
                    quorum: ask.quorum,
                    expires_in: ask.expires_in.or(self.inner.policy.expires_in),
                },
                Action::Deny { reason } => Gate::Deny {
                    rule: rule.name.clone(),
                    reason: reason.clone(),
                },
            };
        }
        match info {
            Some(i) if scope.asks_approval && i.destructive => Gate::Ask {
                rule: if i.hinted {
                    "annotation"
                } else {
                    "unannotated"
                }
                .into(),
                approvers: Vec::new(),
                quorum: 1,
                expires_in: self.inner.policy.expires_in,
            },
            _ => Gate::Run,
        }
    }

    /// Answers a call a rule denies: "not allowed: <reason>" for the model
    /// and `policy.denied` in the audit trail, together.
    pub(super) async fn deny(
        &self,
        site: CallSite<'_>,
        (rule, reason): (String, String),
    ) -> Result<(), EngineError> {
        let (conversation_id, message_id, tc) = (site.conversation_id, site.message_id, site.tc);
        tracing::info!(tool = %tc.name, rule = %rule, "tool call denied by a rule");
        let answered = self
            .inner
            .store
            .deny_call(DeniedCall {
                conversation_id: conversation_id.to_string(),
                message_id: message_id.to_string(),
                text: format!("not allowed: {reason}"),
                rule,
                tool: tc.name.clone(),
                server: tc.server.clone(),
                arguments: tc.arguments.clone(),
                reason,
            })
            .await?;
        if answered {
            self.inner
                .events
                .emit(EventKind::ToolCallFinished, conversation_id, |e| {
                    e.tool = Some(tc.name.clone());
                    e.detail = Some("denied".into());
                    e.node = site.scope.node_name();
                });
        }
        Ok(())
    }
}
