//! The HTTP path every provider shares.
//!
//! One `reqwest::Client` (connection pool) per agent. A request gets the
//! configured timeout (60 s by default); 429, 5xx (including Anthropic's
//! 529) and connection failures are retried at most 3 times with exponential
//! backoff and full jitter, honouring `Retry-After` (capped). Timeouts are not
//! retried: a model that took 60 s once will likely do it again, and the user
//! is waiting. Error texts are built from the provider's own `error.message`
//! and scrubbed of the API key, since they end up in the conversation.

use super::types::LlmError;
use rand::Rng;
use serde_json::Value;
use std::time::Duration;

/// Retries after the first attempt.
pub(crate) const MAX_RETRIES: u32 = 3;
/// First backoff; doubles per retry.
const BASE_BACKOFF: Duration = Duration::from_millis(400);
/// Longest wait honoured from `Retry-After`.
const MAX_RETRY_AFTER: Duration = Duration::from_secs(20);

/// A cheap, cloneable HTTP client with the agent's timeout.
#[derive(Clone, Debug)]
pub(crate) struct HttpClient {
    client: reqwest::Client,
    timeout: Duration,
}

impl Default for HttpClient {
    fn default() -> Self {
        Self::new()
    }
}

impl HttpClient {
    /// A client with the default 60 s timeout.
    pub(crate) fn new() -> Self {
        Self::with_timeout(Duration::from_secs(60))
    }

    pub(crate) fn with_timeout(timeout: Duration) -> Self {
        let client = reqwest::Client::builder()
            .timeout(timeout)
            .connect_timeout(Duration::from_secs(10).min(timeout))
            .build()
            .unwrap_or_default();
        HttpClient { client, timeout }
    }

    /// POSTs `body` as JSON and returns the JSON answer, retrying as above.
    /// `secret` is removed from any error text. Timed, and failures
    /// counted by kind, in `/metrics`.
    pub(crate) async fn post_json(
        &self,
        provider: &'static str,
        url: &str,
        headers: &[(&str, String)],
        body: &Value,
        secret: Option<&str>,
    ) -> Result<Value, LlmError> {
        let started = std::time::Instant::now();
        // An async block, so every way out of the retry loop is timed once.
        let out = async {
            let mut attempt = 0;
            loop {
                let mut req = self.client.post(url).json(body);
                for (k, v) in headers {
                    req = req.header(*k, v);
                }
                let outcome = req.send().await;
                let (retryable, wait_hint, err) = match outcome {
                    Ok(resp) => {
                        let status = resp.status();
                        let retry_after = resp
                            .headers()
                            .get(reqwest::header::RETRY_AFTER)
                            .and_then(|v| v.to_str().ok())
                            .and_then(|v| v.trim().parse::<u64>().ok())
                            .map(Duration::from_secs);
                        let text = match resp.text().await {
                            Ok(t) => t,
                            Err(e) => return Err(transport_error(provider, e, self.timeout, secret)),
                        };
                        if status.is_success() {
                            return serde_json::from_str(&text).map_err(|e| LlmError::Decode {
                                provider,
                                message: format!("{e}"),
                            });
                        }
                        let code = status.as_u16();
                        let err = LlmError::Status {
                            provider,
                            status: code,
                            message: scrub(&error_message(&text), secret),
                        };
                        (code == 429 || code >= 500, retry_after, err)
                    }
                    Err(e) => {
                        let err = transport_error(provider, e, self.timeout, secret);
                        (matches!(err, LlmError::Connect { .. }), None, err)
                    }
                };
                if !retryable || attempt >= MAX_RETRIES {
                    return Err(err);
                }
                let wait = wait_hint
                    .map(|w| w.min(MAX_RETRY_AFTER))
                    .unwrap_or_else(|| backoff(attempt));
                tracing::warn!(provider, attempt = attempt + 1, wait_ms = wait.as_millis() as u64, error = %err, "retrying the model call");
                tokio::time::sleep(wait).await;
                attempt += 1;
            }
        }
        .await;
        crate::telemetry::metrics::get().llm(
            provider,
            started.elapsed(),
            out.as_ref().err().map(LlmError::kind),
        );
        out
    }
}

/// Full jitter: a random wait in `[0, base * 2^attempt]`, at least 50 ms.
fn backoff(attempt: u32) -> Duration {
    let cap = BASE_BACKOFF.as_millis() as u64 * (1u64 << attempt.min(6));
    Duration::from_millis(rand::rng().random_range(50..=cap.max(50)))
}

fn transport_error(
    provider: &'static str,
    e: reqwest::Error,
    timeout: Duration,
    secret: Option<&str>,
) -> LlmError {
    if e.is_timeout() {
        LlmError::Timeout {
            provider,
            seconds: timeout.as_secs(),
        }
    } else {
        // reqwest's text includes the URL; ours never carries a key, but scrub anyway.
        let mut message = e.to_string();
        let mut source = std::error::Error::source(&e);
        while let Some(s) = source {
            message = format!("{message}: {s}");
            source = s.source();
        }
        LlmError::Connect {
            provider,
            message: scrub(&message, secret),
        }
    }
}

/// The provider's own explanation: `error.message` in all three formats.
pub(crate) fn error_message(body: &str) -> String {
    let parsed: Option<Value> = serde_json::from_str(body).ok();
    let from_json = parsed.as_ref().and_then(|v| {
        v.pointer("/error/message")
            .or_else(|| v.get("message"))
            .or_else(|| v.get("error"))
            .and_then(Value::as_str)
            .map(str::to_string)
    });
    from_json.unwrap_or_else(|| {
        let t: String = body.chars().take(300).collect();
        if t.trim().is_empty() {
            "(empty body)".into()
        } else {
            t
        }
    })
}

/// Removes `secret` (if any) from `text`.
pub(crate) fn scrub(text: &str, secret: Option<&str>) -> String {
    match secret {
        Some(s) if s.len() >= 4 => text.replace(s, "[redacted]"),
        _ => text.to_string(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_message_reads_every_provider_shape() {
        assert_eq!(
            error_message(r#"{"error":{"message":"bad model","type":"x"}}"#),
            "bad model"
        );
        assert_eq!(
            error_message(
                r#"{"type":"error","error":{"type":"overloaded_error","message":"Overloaded"}}"#
            ),
            "Overloaded"
        );
        assert_eq!(
            error_message(
                r#"{"error":{"code":400,"message":"Invalid JSON payload","status":"INVALID_ARGUMENT"}}"#
            ),
            "Invalid JSON payload"
        );
        assert_eq!(error_message("<html>502</html>"), "<html>502</html>");
        assert_eq!(error_message(""), "(empty body)");
    }

    #[test]
    fn scrub_removes_the_key() {
        assert_eq!(
            scrub("key sk-abcdef is invalid", Some("sk-abcdef")),
            "key [redacted] is invalid"
        );
        assert_eq!(scrub("nothing", None), "nothing");
    }

    #[test]
    fn backoff_grows_and_stays_positive() {
        for attempt in 0..5 {
            let d = backoff(attempt);
            assert!(d >= Duration::from_millis(50));
            assert!(d <= Duration::from_millis(400 * (1 << attempt)));
        }
    }
}
