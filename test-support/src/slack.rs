//! A stand-in for Slack's side of interactive messages (REACH.md §2):
//! it builds the `block_actions` payload a button click sends, encodes it
//! as Slack does (`application/x-www-form-urlencoded`, one field
//! `payload`) and signs it exactly as Slack documents ("Verifying requests
//! from Slack"): `X-Slack-Request-Timestamp: <unix seconds>` and
//! `X-Slack-Signature: v0=<hex HMAC-SHA256(signing secret,
//! "v0:" + timestamp + ":" + raw body)>`. The `response_url` it puts in
//! the payload is a webhook [`crate::webhook::Receiver`] on loopback, so a
//! test reads what the agent posted back.

use hmac::{Hmac, Mac};
use serde_json::{Value, json};
use sha2::Sha256;

/// One Slack app (its signing secret).
pub struct Slack {
    secret: Vec<u8>,
}

/// A request as Slack would send it.
pub struct Signed {
    pub body: String,
    pub timestamp: String,
    pub signature: String,
}

impl Slack {
    pub fn new(signing_secret: &str) -> Slack {
        Slack {
            secret: signing_secret.as_bytes().to_vec(),
        }
    }

    /// `v0=<hex>` for `body` sent at `timestamp`.
    pub fn sign(&self, timestamp: &str, body: &str) -> String {
        let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(&self.secret).expect("any key length");
        mac.update(format!("v0:{timestamp}:").as_bytes());
        mac.update(body.as_bytes());
        let hex: String = mac
            .finalize()
            .into_bytes()
            .iter()
            .map(|b| format!("{b:02x}"))
            .collect();
        format!("v0={hex}")
    }

    /// The click of `action_id` (`stopgo_approve`, `stopgo_reject`) on the
    /// button whose value is `value`, by Slack user `user`, on `message`
    /// (the message as the agent sent it), signed `age_secs` ago.
    pub fn click(
        &self,
        user: &str,
        action_id: &str,
        value: &str,
        response_url: &str,
        message: &Value,
        age_secs: i64,
    ) -> Signed {
        let payload = json!({
            "type": "block_actions",
            "user": {"id": user, "username": user.to_lowercase(), "name": user.to_lowercase(), "team_id": "T0STOPGO"},
            "api_app_id": "A0STOPGO",
            "token": "verification-token-unused",
            "container": {"type": "message", "message_ts": "1700000000.000100", "channel_id": "C0OPS", "is_ephemeral": false},
            "trigger_id": "1234.5678.abcdef",
            "team": {"id": "T0STOPGO", "domain": "stopgo"},
            "channel": {"id": "C0OPS", "name": "ops"},
            "message": message,
            "response_url": response_url,
            "actions": [{
                "type": "button",
                "action_id": action_id,
                "block_id": "stopgo_decide",
                "value": value,
                "text": {"type": "plain_text", "text": "Approve"},
                "action_ts": "1700000001.000200",
            }],
        });
        self.signed(&payload.to_string(), age_secs)
    }

    /// `payload` form-encoded and signed `age_secs` ago.
    pub fn signed(&self, payload: &str, age_secs: i64) -> Signed {
        let body = serde_urlencoded::to_string([("payload", payload)]).expect("strings encode");
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_secs() as i64)
            .unwrap_or_default();
        let timestamp = (now - age_secs).to_string();
        let signature = self.sign(&timestamp, &body);
        Signed {
            body,
            timestamp,
            signature,
        }
    }
}
