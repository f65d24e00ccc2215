//! The agent's public keys, as an executor holds them: read from a file
//! or fetched from a URL once, then served from memory by `kid`. A receipt
//! signed with a key not yet known (the agent rotated its key) makes one
//! fetch, at most every [`REFRESH_EVERY`]; no request waits on the
//! network once its key is cached.

use receipts::{Expect, Keys, Receipt, Refusal};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::RwLock;

/// The least time between two reads of the JWKS for an unknown `kid`.
pub const REFRESH_EVERY: Duration = Duration::from_secs(30);
/// How long one fetch of a JWKS URL may take.
const FETCH_TIMEOUT: Duration = Duration::from_secs(5);

/// The keys of one JWKS source.
pub struct Jwks {
    source: String,
    http: reqwest::Client,
    cached: RwLock<Cached>,
}

#[derive(Default)]
struct Cached {
    keys: Arc<Keys>,
    read_at: Option<Instant>,
}

impl Jwks {
    /// Keys from `source` (an `http(s)://` URL or a file), read when first
    /// needed.
    pub fn new(source: &str) -> Jwks {
        Jwks {
            source: source.to_string(),
            http: reqwest::Client::builder()
                .timeout(FETCH_TIMEOUT)
                .build()
                .unwrap_or_default(),
            cached: RwLock::default(),
        }
    }

    /// [`receipts::verify`] with the cached keys; an unknown key reads the
    /// JWKS again (at most every [`REFRESH_EVERY`]) and tries once more.
    pub async fn verify(&self, jws: Option<&str>, expect: &Expect<'_>) -> Result<Receipt, Refusal> {
        let keys = self.cached.read().await.keys.clone();
        match receipts::verify(jws, &keys, expect) {
            Err(Refusal::UnknownKey(kid)) => match self.refresh().await {
                Some(keys) => receipts::verify(jws, &keys, expect),
                None => Err(Refusal::UnknownKey(kid)),
            },
            other => other,
        }
    }

    /// Reads the JWKS again unless it was read within [`REFRESH_EVERY`];
    /// the keys now held, or `None` when nothing new was read.
    async fn refresh(&self) -> Option<Arc<Keys>> {
        let mut cached = self.cached.write().await;
        if cached.read_at.is_some_and(|t| t.elapsed() < REFRESH_EVERY) {
            return None;
        }
        cached.read_at = Some(Instant::now());
        match self.read().await {
            Ok(keys) => {
                cached.keys = Arc::new(keys);
                Some(cached.keys.clone())
            }
            Err(e) => {
                tracing::warn!(source = %self.source, "cannot read the agent's JWKS: {e}");
                None
            }
        }
    }

    async fn read(&self) -> Result<Keys, String> {
        let text = if self.source.starts_with("http://") || self.source.starts_with("https://") {
            let r = self
                .http
                .get(&self.source)
                .send()
                .await
                .map_err(|e| e.to_string())?;
            if !r.status().is_success() {
                return Err(format!("HTTP {}", r.status()));
            }
            r.text().await.map_err(|e| e.to_string())?
        } else {
            tokio::fs::read_to_string(&self.source)
                .await
                .map_err(|e| e.to_string())?
        };
        let set: serde_json::Value = serde_json::from_str(&text).map_err(|e| e.to_string())?;
        Keys::from_jwks(&set)
    }
}
