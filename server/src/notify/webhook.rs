//! Webhook delivery (POLICY.md §5): one signed POST per attempt.
//!
//! `X-StopGo-Signature: t=<unix>,v1=<hex HMAC-SHA-256(secret, "<t>.<body>")>`
//! lets the receiver check the body came from us and is fresh (it should
//! refuse an old `t`); `X-StopGo-Delivery` carries the id a receiver
//! dedupes retries by. Any answer but 2xx is a failed attempt, and a
//! `Retry-After` (seconds or an HTTP date) says when to try again.

use hmac::{Hmac, Mac};
use sha2::Sha256;
use std::time::Duration;

/// Each attempt's limit (POLICY.md §5 / the issue: 10 s).
pub(crate) const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(10);
/// How long a failing row is retried by default.
pub(crate) const RETRY_FOR: Duration = Duration::from_secs(24 * 3600);

/// Why an attempt failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Failure {
    /// What the log and `/ui/notifications` show (never a secret, never
    /// the receiver's body).
    pub(crate) error: String,
    /// The receiver's `Retry-After`.
    pub(crate) retry_after: Option<Duration>,
}

/// `t=<unix>,v1=<hex>` for `body` at `t`.
pub(crate) fn signature(secret: &[u8], t: i64, body: &[u8]) -> String {
    let mut mac = <Hmac<Sha256> as Mac>::new_from_slice(secret)
        .unwrap_or_else(|_| unreachable!("HMAC accepts any key length"));
    mac.update(format!("{t}.").as_bytes());
    mac.update(body);
    format!(
        "t={t},v1={}",
        crate::domain::digest::hex(&mac.finalize().into_bytes())
    )
}

/// One attempt: POSTs `body` to `url`.
pub(crate) async fn post(
    http: &reqwest::Client,
    url: &str,
    secret: Option<&str>,
    id: &str,
    event: &str,
    body: Vec<u8>,
) -> Result<(), Failure> {
    let mut req = http
        .post(url)
        .header(reqwest::header::CONTENT_TYPE, "application/json")
        .header("X-StopGo-Event", event)
        .header("X-StopGo-Delivery", id);
    if let Some(s) = secret {
        let t = chrono::Utc::now().timestamp();
        req = req.header("X-StopGo-Signature", signature(s.as_bytes(), t, &body));
    }
    send(req.body(body)).await
}

/// Sends a prepared request: 2xx is delivered, anything else a failure
/// (with the receiver's `Retry-After`, if it gave one).
pub(crate) async fn send(req: reqwest::RequestBuilder) -> Result<(), Failure> {
    let resp = req.send().await.map_err(|e| Failure {
        error: if e.is_timeout() {
            "timed out after 10 s".into()
        } else if e.is_connect() {
            "could not connect".into()
        } else {
            "the request failed".into()
        },
        retry_after: None,
    })?;
    let status = resp.status();
    if status.is_success() {
        return Ok(());
    }
    let retry_after = resp
        .headers()
        .get(reqwest::header::RETRY_AFTER)
        .and_then(|v| v.to_str().ok())
        .and_then(parse_retry_after);
    Err(Failure {
        error: format!("HTTP {}", status.as_u16()),
        retry_after,
    })
}

/// `Retry-After`: delay-seconds or an HTTP date.
pub(crate) fn parse_retry_after(v: &str) -> Option<Duration> {
    let v = v.trim();
    if let Ok(s) = v.parse::<u64>() {
        return Some(Duration::from_secs(s));
    }
    let at = chrono::DateTime::parse_from_rfc2822(v).ok()?;
    let wait = at.with_timezone(&chrono::Utc) - chrono::Utc::now();
    Some(wait.to_std().unwrap_or(Duration::ZERO))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_signature_is_hmac_sha256_of_t_dot_body() {
        // Python: hmac.new(b"s3cret", b"1700000000.{}", hashlib.sha256).hexdigest()
        assert_eq!(
            signature(b"s3cret", 1_700_000_000, b"{}"),
            "t=1700000000,v1=97926816e98fbb41ccb1673225ff29a2f35369099990e1b1561651e7bd097ebf"
        );
    }

    #[test]
    fn retry_after_reads_seconds_and_dates() {
        assert_eq!(parse_retry_after("7"), Some(Duration::from_secs(7)));
        assert_eq!(
            parse_retry_after("Wed, 21 Oct 2015 07:28:00 GMT"),
            Some(Duration::ZERO)
        );
        assert_eq!(parse_retry_after("soon"), None);
    }
}
