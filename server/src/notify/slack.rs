//! Slack interactivity (REACH.md §2): the buttons' clicks come back signed.
//!
//! Slack signs each request with the app's signing secret:
//! `v0=<hex HMAC-SHA256(secret, "v0:" + timestamp + ":" + raw body)>` in
//! `X-Slack-Signature`, the timestamp in `X-Slack-Request-Timestamp`. The
//! signature is the route's only authentication, so it is checked over
//! the raw bytes (before anything parses them), compared in constant time
//! (`subtle`), and a timestamp more than five minutes from now is refused
//! so a captured request cannot be replayed later. Several Slack targets
//! may have their own apps: the one whose secret verifies is the one whose
//! `users` map the clicker.
//!
//! The outcome goes back to Slack through the click's `response_url`, only
//! to the hosts the target allows (an attacker who could make us post
//! anywhere would have a request forger inside the network).

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;
use std::collections::BTreeMap;
use subtle::ConstantTimeEq;

/// How far a request's timestamp may be from now (Slack's advice).
pub(crate) const WINDOW_SECS: i64 = 300;

/// One Slack target's app.
#[derive(Clone)]
pub(crate) struct SlackApp {
    pub(crate) target: String,
    secret: Vec<u8>,
    users: BTreeMap<String, String>,
    hosts: Vec<String>,
}

impl std::fmt::Debug for SlackApp {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SlackApp")
            .field("target", &self.target)
            .finish_non_exhaustive()
    }
}

impl SlackApp {
    pub(crate) fn new(target: &str, c: &crate::config::InteractiveConfig) -> SlackApp {
        SlackApp {
            target: target.to_string(),
            secret: c.signing_secret.expose().as_bytes().to_vec(),
            users: c.users.clone(),
            hosts: c.response_hosts.clone(),
        }
    }

    /// The principal a Slack user decides as.
    pub(crate) fn principal_of(&self, slack_user: &str) -> Option<&str> {
        self.users.get(slack_user).map(String::as_str)
    }

    /// Whether this app signed `body` at `timestamp` as `signature` says.
    fn signed(&self, timestamp: &str, body: &[u8], signature: &str) -> bool {
        let Ok(mut mac) = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret) else {
            return false;
        };
        mac.update(b"v0:");
        mac.update(timestamp.as_bytes());
        mac.update(b":");
        mac.update(body);
        let expected = format!(
            "v0={}",
            crate::domain::digest::hex(&mac.finalize().into_bytes())
        );
        expected.as_bytes().ct_eq(signature.as_bytes()).into()
    }

    /// Whether the outcome may be posted to `url`: a host of
    /// `response_hosts`, over https (http only to `127.0.0.1`).
    pub(crate) fn may_respond_to(&self, url: &str) -> bool {
        let Ok(u) = reqwest::Url::parse(url) else {
            return false;
        };
        let Some(host) = u.host_str() else {
            return false;
        };
        let scheme_ok = match u.scheme() {
            "https" => true,
            "http" => host == "127.0.0.1",
            _ => false,
        };
        scheme_ok
            && u.username().is_empty()
            && u.password().is_none()
            && self.hosts.iter().any(|h| h.eq_ignore_ascii_case(host))
    }
}

/// Why a request is not Slack's.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Unsigned {
    /// A header is missing or malformed.
    Missing(&'static str),
    /// The timestamp is more than [`WINDOW_SECS`] from now.
    Stale,
    /// No configured app's secret makes this signature.
    BadSignature,
}

impl std::fmt::Display for Unsigned {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Unsigned::Missing(what) => write!(f, "the request has no valid {what} header"),
            Unsigned::Stale => write!(
                f,
                "the request's timestamp is more than {} minutes from now",
                WINDOW_SECS / 60
            ),
            Unsigned::BadSignature => f.write_str("the request's Slack signature does not verify"),
        }
    }
}

/// The app that signed a request, or why none did. `now`: Unix seconds.
pub(crate) fn verify<'a>(
    apps: &'a [SlackApp],
    timestamp: Option<&str>,
    signature: Option<&str>,
    body: &[u8],
    now: i64,
) -> Result<&'a SlackApp, Unsigned> {
    let ts = timestamp
        .map(str::trim)
        .filter(|t| !t.is_empty() && t.len() <= 20)
        .ok_or(Unsigned::Missing("X-Slack-Request-Timestamp"))?;
    let at: i64 = ts
        .parse()
        .map_err(|_| Unsigned::Missing("X-Slack-Request-Timestamp"))?;
    let sig = signature
        .map(str::trim)
        .filter(|s| s.starts_with("v0=") && s.len() <= 200)
        .ok_or(Unsigned::Missing("X-Slack-Signature"))?;
    if now.abs_diff(at) > WINDOW_SECS.unsigned_abs() {
        return Err(Unsigned::Stale);
    }
    apps.iter()
        .find(|a| a.signed(ts, body, sig))
        .ok_or(Unsigned::BadSignature)
}

/// The message that replaces the clicked one: the original's blocks with
/// the outcome beneath them. While the approval still waits (a vote short
/// of the quorum, a refused click) the buttons stay for the others; once
/// it is decided they go.
pub(crate) fn outcome_message(original: &Value, outcome: &str, still_pending: bool) -> Value {
    let mut blocks: Vec<Value> = original["blocks"]
        .as_array()
        .map(|b| {
            b.iter()
                .filter(|b| b["block_id"] != "stopgo_outcome")
                .filter(|b| still_pending || b["type"] != "actions")
                .cloned()
                .collect()
        })
        .unwrap_or_default();
    blocks.push(json!({
        "type": "section",
        "block_id": "stopgo_outcome",
        "text": {"type": "mrkdwn", "text": super::body::mrkdwn(outcome)},
    }));
    json!({
        "replace_original": true,
        "text": outcome,
        "blocks": blocks,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn app(secret: &str) -> SlackApp {
        SlackApp {
            target: "s".into(),
            secret: secret.as_bytes().to_vec(),
            users: BTreeMap::new(),
            hosts: vec!["hooks.slack.com".into(), "127.0.0.1".into()],
        }
    }

    #[test]
    fn slack_documented_example_verifies() {
        // The example of Slack's "Verifying requests from Slack" page.
        let secret = "8f742231b10e8888abcd99yyyzzz85a5";
        let ts = "1531420618";
        let body = b"token=xyzz0WbapA4vBCDEFasx0q6G&team_id=T1DC2JH3J&team_domain=testteamnow&channel_id=G8PSS9T3V&channel_name=foobar&user_id=U2CERLKJA&user_name=roadrunner&command=%2Fwebhook-collect&text=&response_url=https%3A%2F%2Fhooks.slack.com%2Fcommands%2FT1DC2JH3J%2F397700885554%2F96rGlfmibIGlgcZRskXaIFfN&trigger_id=398738663015.47445629121.803a0bc887a14d10d2c447fce8b6703c";
        let sig = "v0=a2114d57b48eac39b9ad189dd8316235a7b4a8d21a10bd27519666489c69b503";
        let apps = [app("other"), app(secret)];
        let now = 1531420618 + 10;
        assert_eq!(
            verify(&apps, Some(ts), Some(sig), body, now).map(|a| a.secret.clone()),
            Ok(secret.as_bytes().to_vec())
        );
        let mut altered = body.to_vec();
        altered[0] = b'T';
        assert_eq!(
            verify(&apps, Some(ts), Some(sig), &altered, now).err(),
            Some(Unsigned::BadSignature)
        );
        assert_eq!(
            verify(&apps, Some(ts), Some(sig), body, now + 360).err(),
            Some(Unsigned::Stale)
        );
        assert_eq!(
            verify(&apps, None, Some(sig), body, now).err(),
            Some(Unsigned::Missing("X-Slack-Request-Timestamp"))
        );
        assert_eq!(
            verify(&apps, Some(ts), Some("a2114d"), body, now).err(),
            Some(Unsigned::Missing("X-Slack-Signature"))
        );
        // Timestamps at the ends of i64 are stale, never an overflow.
        for far in ["-9223372036854775808", "9223372036854775807"] {
            assert_eq!(
                verify(&apps, Some(far), Some(sig), body, now).err(),
                Some(Unsigned::Stale)
            );
        }
    }

    #[test]
    fn responses_go_only_to_allowed_hosts() {
        let a = app("x");
        assert!(a.may_respond_to("https://hooks.slack.com/actions/T/1/abc"));
        assert!(a.may_respond_to("http://127.0.0.1:9/r"));
        assert!(!a.may_respond_to("http://hooks.slack.com/actions/T/1/abc"));
        assert!(!a.may_respond_to("https://evil.example/actions"));
        assert!(!a.may_respond_to("https://hooks.slack.com.evil.example/x"));
        assert!(!a.may_respond_to("https://u:p@hooks.slack.com/x"));
        assert!(!a.may_respond_to("not a url"));
    }

    #[test]
    fn the_outcome_keeps_buttons_only_while_pending() {
        let original = json!({"blocks": [
            {"type": "header"},
            {"type": "actions", "block_id": "stopgo_decide"},
            {"type": "section", "block_id": "stopgo_outcome"},
        ]});
        let m = outcome_message(&original, "Needs 1 more approval (1 of 2)", true);
        assert_eq!(m["replace_original"], true);
        assert_eq!(m["blocks"].as_array().map(Vec::len), Some(3));
        let m = outcome_message(&original, "Approved by alice", false);
        let types: Vec<&str> = m["blocks"]
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|b| b["type"].as_str())
            .collect();
        assert_eq!(types, ["header", "section"]);
        assert_eq!(m["text"], "Approved by alice");
    }
}
