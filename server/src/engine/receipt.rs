//! The signed receipt a call runs under (RECEIPTS.md §1).
//!
//! Minted at the one moment the gate lets a decided call through: inside
//! the transaction that claims it (`executing`), from the approval as that
//! transaction sees it, so the receipt names exactly the votes that
//! carried it, the arguments that run (after an edit) and the rule that
//! asked, and is stored with the row. The executor verifies it before it
//! acts; the audit row of the call holds its digest.
//!
//! Why a receipt's `exp` counts from the decision, not from the call: a
//! decision is what it certifies, and one left waiting (the agent down for
//! an hour) should not carry a fresh authority to the server.

use crate::domain::channel::Channel;
use crate::store::Mint;
use crate::store::approvals::Approval;
use receipts::{Actor, Approver, ChainLink, Detail, Policy, Receipt, Signer};
use serde_json::Value;
use std::sync::Arc;
use std::time::Duration;

/// Who signs receipts, and what every receipt says of this agent.
#[derive(Debug)]
pub(crate) struct Issuer {
    signer: Arc<Signer>,
    /// The agent's public base URL (`iss`).
    iss: String,
    ttl: Duration,
    /// The agent's name (`act.sub`).
    agent: String,
    /// The digest of the `approvals:` section in force.
    policy_sha256: String,
}

/// The call a receipt allows.
pub(crate) struct Call<'a> {
    pub(crate) server: &'a str,
    pub(crate) tool: &'a str,
    /// The arguments as they run (after an approver's edit).
    pub(crate) arguments: &'a Value,
}

impl Issuer {
    pub(crate) fn new(signer: Arc<Signer>, iss: &str, config: &crate::config::Config) -> Issuer {
        let ttl = config
            .receipts
            .as_ref()
            .and_then(|r| crate::domain::duration::parse(&r.ttl).ok())
            .unwrap_or(Duration::from_secs(600));
        Issuer {
            signer,
            iss: iss.trim_end_matches('/').to_string(),
            ttl,
            agent: config.name.clone(),
            policy_sha256: config.approvals_sha256.clone(),
        }
    }

    /// The claims of the receipt for `call` under approval `a` (decided by
    /// a grant of `granter`'s, when it was), at `now` (seconds).
    pub(crate) fn claims(
        &self,
        a: &Approval,
        granter: Option<&str>,
        call: &Call<'_>,
        now: i64,
    ) -> Receipt {
        let decided = a.decided_at.as_deref().and_then(seconds_of).unwrap_or(now);
        Receipt {
            iss: self.iss.clone(),
            jti: a.approval.uuid.clone(),
            iat: now,
            exp: decided + i64::try_from(self.ttl.as_secs()).unwrap_or(600),
            txn: a.approval.conversation_id.clone(),
            act: Actor {
                sub: self.agent.clone(),
            },
            authorization_details: vec![Detail::approved(call.server, call.tool, call.arguments)],
            approvers: approvers(a, granter),
            policy: Policy {
                rule: a
                    .approval
                    .rule
                    .clone()
                    .unwrap_or_else(|| "annotation".into()),
                sha256: self.policy_sha256.clone(),
            },
            chain: a
                .upstream_receipt
                .as_deref()
                .map(chain_of)
                .unwrap_or_default(),
        }
    }

    /// The signing step of a proxy approval's relay: the call is the one
    /// the approval names (its tool, its arguments as edited) on
    /// `server` (the sub-agent).
    pub(crate) fn mint_from_row(self: &Arc<Self>, server: &str) -> Mint {
        let me = self.clone();
        let server = server.to_string();
        Box::new(move |a: &Approval, granter: Option<&str>| {
            let args = a
                .approval
                .edited_args
                .clone()
                .unwrap_or_else(|| a.approval.tool_args.clone());
            let call = Call {
                server: &server,
                tool: &a.approval.tool_name,
                arguments: &args,
            };
            me.sign(a, granter, &call)
        })
    }

    fn sign(&self, a: &Approval, granter: Option<&str>, call: &Call<'_>) -> Option<String> {
        let now = chrono::Utc::now().timestamp();
        match self.signer.sign(&self.claims(a, granter, call, now)) {
            Ok(jws) => Some(jws),
            Err(e) => {
                tracing::error!(approval = %a.approval.uuid, "cannot sign the call's receipt: {e}");
                None
            }
        }
    }

    /// The signing step the claim of `call` runs in its transaction.
    pub(crate) fn mint(self: &Arc<Self>, call: &Call<'_>) -> Mint {
        let me = self.clone();
        let (server, tool, arguments) = (
            call.server.to_string(),
            call.tool.to_string(),
            call.arguments.clone(),
        );
        Box::new(move |a: &Approval, granter: Option<&str>| {
            let call = Call {
                server: &server,
                tool: &tool,
                arguments: &arguments,
            };
            me.sign(a, granter, &call)
        })
    }
}

/// The agents an approval came through, from the upstream receipt that
/// approved it: that receipt's issuer, approval and approvers, then the
/// agents it names in turn. Read, not verified: it came from the caller
/// this agent authenticated, and what it says is only recorded.
fn chain_of(upstream: &str) -> Vec<ChainLink> {
    let Some(claims) = receipts::unverified_claims(upstream) else {
        return Vec::new();
    };
    let Ok(r) = serde_json::from_value::<Receipt>(claims) else {
        return Vec::new();
    };
    let mut chain = vec![ChainLink {
        iss: r.iss,
        jti: r.jti,
        approvers: r.approvers,
    }];
    chain.extend(r.chain);
    chain
}

/// Every approving vote: a quorum's votes, else the one decision (a
/// grant's use names the granter, `via: grant`).
fn approvers(a: &Approval, granter: Option<&str>) -> Vec<Approver> {
    let voted: Vec<Approver> = a
        .approval
        .votes
        .iter()
        .filter(|v| v.approve)
        .map(|v| Approver {
            sub: v.by.clone(),
            via: v.via.clone(),
            at: v.at.clone(),
        })
        .collect();
    if !voted.is_empty() {
        return voted;
    }
    let via = a.approval.decided_via.clone().unwrap_or_default();
    let by = a.decided_by.clone().unwrap_or_default();
    let sub = match granter {
        Some(g) if via == Channel::Grant.as_str() => g.to_string(),
        _ => by,
    };
    vec![Approver {
        sub,
        via,
        at: a.decided_at.clone().unwrap_or_default(),
    }]
}

/// The digest of a receipt as the audit row records it: base64url
/// SHA-256 of the compact JWS.
pub(crate) fn digest(jws: &str) -> String {
    use base64::Engine as _;
    use sha2::Digest as _;
    base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(sha2::Sha256::digest(jws.as_bytes()))
}

/// Seconds since the epoch of an RFC 3339 time as the store writes it.
fn seconds_of(at: &str) -> Option<i64> {
    chrono::DateTime::parse_from_rfc3339(at)
        .ok()
        .map(|t| t.timestamp())
}

#[cfg(test)]
mod tests {
    use super::*;
    use app::models::{ApprovalStatus, PendingApproval, Vote};
    use serde_json::json;

    const PEM: &str = include_str!("../../../testdata/card-keys/b1.pem");

    fn issuer() -> Issuer {
        Issuer {
            signer: Arc::new(Signer::from_pem(PEM, "k1").unwrap()),
            iss: "http://agent.test".into(),
            ttl: Duration::from_secs(600),
            agent: "ops".into(),
            policy_sha256: "P".into(),
        }
    }

    fn approval(votes: Vec<Vote>, by: &str, via: &str) -> Approval {
        Approval {
            approval: PendingApproval {
                uuid: "u1".into(),
                conversation_id: "c1".into(),
                rule: Some("prod-writes".into()),
                decided_via: Some(via.into()),
                votes,
                ..Default::default()
            },
            message_id: "m1".into(),
            server: Some("resources".into()),
            status: ApprovalStatus::Approved,
            reason: None,
            decided_by: Some(by.into()),
            decided_at: Some("2026-12-07T10:00:00.000Z".into()),
            traceparent: None,
            expires_in: None,
            remote_approval: None,
            receipt: None,
            upstream_receipt: None,
        }
    }

    fn vote(by: &str, approve: bool) -> Vote {
        Vote {
            by: by.into(),
            approve,
            at: "2026-12-07T09:59:00.000Z".into(),
            via: "ui".into(),
            reason: None,
        }
    }

    const CALL: Call<'static> = Call {
        server: "resources",
        tool: "resources_delete",
        arguments: &Value::Null,
    };

    #[test]
    fn one_decision_names_its_approver_and_expires_after_the_decision() {
        let r = issuer().claims(&approval(vec![], "alice", "rest"), None, &CALL, 1);
        assert_eq!(r.approvers.len(), 1);
        assert_eq!(
            (r.approvers[0].sub.as_str(), r.approvers[0].via.as_str()),
            ("alice", "rest")
        );
        assert_eq!(r.exp, seconds_of("2026-12-07T10:00:00Z").unwrap() + 600);
        assert_eq!(
            (r.jti.as_str(), r.txn.as_str(), r.act.sub.as_str()),
            ("u1", "c1", "ops")
        );
        assert_eq!(r.policy.rule, "prod-writes");
        assert_eq!(r.authorization_details[0].server, "resources");
    }

    #[test]
    fn a_quorum_names_each_approving_vote_and_a_grant_its_granter() {
        let q = approval(
            vec![
                vote("alice", true),
                vote("mallory", false),
                vote("bob", true),
            ],
            "bob",
            "ui",
        );
        let r = issuer().claims(&q, None, &CALL, 1);
        let subs: Vec<&str> = r.approvers.iter().map(|a| a.sub.as_str()).collect();
        assert_eq!(subs, ["alice", "bob"]);
        let g = approval(vec![], "grant:g1", "grant");
        let r = issuer().claims(&g, Some("carol"), &CALL, 1);
        assert_eq!(
            (r.approvers[0].sub.as_str(), r.approvers[0].via.as_str()),
            ("carol", "grant")
        );
    }

    #[test]
    fn the_minted_receipt_verifies_for_the_arguments_that_run() {
        let i = Arc::new(issuer());
        let args = json!({"id": "r1"});
        let call = Call {
            server: "resources",
            tool: "resources_delete",
            arguments: &args,
        };
        let jws = (i.mint(&call))(&approval(vec![], "alice", "rest"), None).unwrap();
        let keys = receipts::Keys::from_jwks(&json!({"keys": [i.signer.jwk()]})).unwrap();
        let now = seconds_of("2026-12-07T10:01:00Z").unwrap();
        let expect = receipts::Expect::call(
            "http://agent.test",
            "resources",
            "resources_delete",
            &args,
            now,
        );
        assert!(receipts::verify(Some(&jws), &keys, &expect).is_ok());
        let other = json!({"id": "r2"});
        let expect = receipts::Expect::call(
            "http://agent.test",
            "resources",
            "resources_delete",
            &other,
            now,
        );
        assert_eq!(
            receipts::verify(Some(&jws), &keys, &expect),
            Err(receipts::Refusal::ArgumentsDiffer)
        );
    }
}
