//! What a built-in server checks before a destructive call runs
//! (RECEIPTS.md §2-§3), one implementation for `mcp-resources` and
//! `mcp-filesystem`:
//!
//! - **Receipts** (`require_receipts`): the call must carry the agent's
//!   signed receipt (`_meta["dev.stopgo/receipt"]`) that verifies under the
//!   agent's JWKS and allows exactly this call (this server's name, this
//!   tool, these arguments), unexpired and unused. The check is the
//!   `receipts` crate's `verify`; the keys are fetched once and cached by
//!   `kid` ([`jwks`]); single use is the [`ledger`]'s, which outlives the
//!   process.
//! - **Idempotency keys**: a destructive call repeated with the key it was
//!   first sent with (`_meta["dev.stopgo/idempotency-key"]`, or the
//!   `Idempotency-Key` header over HTTP) gets the first outcome back
//!   without running again; the same key with other arguments is refused.
//!   Outcomes are kept [`ledger::KEEP`] (24 h).
//!
//! A refusal is a tool error (`isError`) whose text says why, and nothing
//! runs. Read-only tools pass straight through.
//!
//! Why the outcome is recorded right after the tool returns, with no
//! await in between: a server that hands back what it did must not lose
//! it to a client that went away mid-call (the agent killed while it
//! waited); the tool and the record happen in one poll of the call.

pub mod jwks;
pub mod ledger;

use ledger::{Ledger, Prior};
use rmcp::model::{CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer};
use serde_json::Value;
use std::future::Future;
use std::path::Path;

/// Where the agent says where a server's receipts come from
/// (`require_receipts`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RequireReceipts {
    /// The agent's JWKS: an `http(s)://` URL or a file.
    pub jwks: String,
    /// The agent's `iss` (its public base URL).
    pub issuer: String,
    /// The name the agent calls this server (its `mcp_servers[].name`).
    pub server_name: String,
}

/// The checks, with their keys and their store.
pub struct Guard {
    receipts: Option<(RequireReceipts, jwks::Jwks)>,
    ledger: Ledger,
    /// The ledger outlives the process (a file): only then does the
    /// server say it honours idempotency keys.
    durable: bool,
}

/// The `experimental` capability a server declares when it honours
/// idempotency keys (RECEIPTS.md §3), which the agent reads.
pub const IDEMPOTENCY_CAPABILITY: &str = "dev.stopgo/idempotency";

/// The HTTP header that carries a call's idempotency key.
pub const IDEMPOTENCY_HEADER: &str = "idempotency-key";

impl Guard {
    /// Opens the ledger at `path` (created if missing); with `receipts`,
    /// destructive calls need one, and a ledger that cannot be written is
    /// an error (a receipt's single use must outlive the process). Without
    /// them, such a ledger is kept in memory, with a warning, and the
    /// server does not claim to honour keys.
    pub fn open(path: &Path, receipts: Option<RequireReceipts>) -> anyhow::Result<Guard> {
        let (ledger, durable) = match Ledger::open(path) {
            Ok(l) => (l, true),
            Err(e) if receipts.is_none() => {
                tracing::warn!(ledger = %path.display(), "the ledger cannot be written ({e}): idempotency keys are kept in memory only, and the server does not say it honours them");
                (Ledger::in_memory()?, false)
            }
            Err(e) => return Err(e),
        };
        Ok(Guard {
            receipts: receipts.map(|r| {
                let keys = jwks::Jwks::new(&r.jwks);
                (r, keys)
            }),
            ledger,
            durable,
        })
    }

    /// Whether the server may declare [`IDEMPOTENCY_CAPABILITY`]: its
    /// ledger outlives the process.
    pub fn honours_keys(&self) -> bool {
        self.durable
    }

    /// Runs `run` for the call `request` of a tool that is `destructive`
    /// or not, after the checks; the first outcome again for a repeated
    /// key.
    pub async fn call<F, Fut>(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
        destructive: bool,
        run: F,
    ) -> Result<CallToolResponse, ErrorData>
    where
        F: FnOnce(CallToolRequestParams, RequestContext<RoleServer>) -> Fut,
        Fut: Future<Output = Result<CallToolResponse, ErrorData>>,
    {
        if !destructive {
            return run(request, context).await;
        }
        let args = Value::Object(request.arguments.clone().unwrap_or_default());
        let digest = receipts::arguments_sha256(&args);
        let key = idempotency_key(&request, &context);
        if let Some(k) = &key {
            match self.ledger.prior(k, &digest) {
                Ok(Prior::None) => {}
                Ok(Prior::Done(outcome)) => return Ok(outcome.into()),
                Ok(Prior::OtherArguments) => {
                    return Ok(refused(
                        "idempotency key reused: this key was first sent with other arguments",
                    ));
                }
                Ok(Prior::Unsettled) => {
                    return Ok(refused(
                        "in doubt: a call with this idempotency key started and its outcome was not recorded; check before retrying",
                    ));
                }
                Err(e) => return Ok(refused(&format!("the server's ledger failed: {e}"))),
            }
        }
        let receipt = meta_str(&request, &context, receipts::META_RECEIPT);
        let jti = match self
            .check_receipt(&request.name, receipt.as_deref(), &args)
            .await
        {
            Ok(jti) => jti,
            Err(why) => return Ok(refused(&why)),
        };
        match self.ledger.reserve(jti.as_deref(), key.as_deref(), &digest) {
            Ok(true) => {}
            Ok(false) => return Ok(refused(&receipts::Refusal::AlreadyUsed.to_string())),
            Err(e) => return Ok(refused(&format!("the server's ledger failed: {e}"))),
        }
        let out = run(request, context).await;
        // No await between the tool's end and this record (module docs).
        if let Some(k) = &key {
            let settled = match &out {
                Ok(CallToolResponse::Complete(r)) => self.ledger.settle(k, r),
                // Nothing ran to the end: the key may be used again.
                _ => self.ledger.release(k),
            };
            if let Err(e) = settled {
                tracing::error!("the ledger could not record a call's outcome: {e}");
            }
        }
        out
    }

    /// The receipt's `jti` when receipts are required and this one allows
    /// the call; why not, in the words the caller reads.
    async fn check_receipt(
        &self,
        tool: &str,
        jws: Option<&str>,
        args: &Value,
    ) -> Result<Option<String>, String> {
        let Some((require, keys)) = &self.receipts else {
            return Ok(None);
        };
        let now = chrono::Utc::now().timestamp();
        let expect = receipts::Expect::call(&require.issuer, &require.server_name, tool, args, now);
        let verified = keys.verify(jws, &expect).await.map_err(|r| r.to_string())?;
        Ok(Some(verified.jti))
    }
}

/// A tool error saying why nothing ran.
fn refused(why: &str) -> CallToolResponse {
    CallToolResult::error(vec![ContentBlock::text(format!("refused: {why}"))]).into()
}

/// A string of the request's `_meta` (rmcp hands it to the handler in the
/// context; a request built by hand may still carry it in its params).
fn meta_str(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
    key: &str,
) -> Option<String> {
    context
        .meta
        .get(key)
        .or_else(|| request.meta.as_ref().and_then(|m| m.get(key)))
        .and_then(Value::as_str)
        .map(str::to_string)
}

/// The call's idempotency key: `_meta`, else the HTTP header.
fn idempotency_key(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> Option<String> {
    meta_str(request, context, receipts::META_IDEMPOTENCY_KEY)
        .or_else(|| {
            context
                .extensions
                .get::<axum::http::request::Parts>()
                .and_then(|p| p.headers.get(IDEMPOTENCY_HEADER))
                .and_then(|v| v.to_str().ok())
                .map(str::to_string)
        })
        .filter(|k| !k.is_empty() && k.len() <= 512)
}
