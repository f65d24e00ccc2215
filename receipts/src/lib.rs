//! Signed approval receipts (RECEIPTS.md §1, §2): what a human's decision
//! looks like when it travels with the call it allowed.
//!
//! A receipt is a compact JWS (`typ: stopgo-receipt+jwt`, ES256 or EdDSA)
//! over [`Receipt`]'s claims: who issued it, which approval (`jti`), the
//! conversation, the exact call it allows (server, tool and the RFC 8785
//! digest of its arguments, in RFC 9396's `authorization_details` shape),
//! every approver's vote, the policy in force, and the agents a proxy
//! approval came through.
//!
//! Key decisions:
//! - **One verification function** ([`verify`]) for the agent's CLI and
//!   for every executor, so "valid" means one thing everywhere; it returns
//!   a [`Refusal`] whose text is what an executor tells its caller.
//! - **No hand-written crypto**: the signature is jsonwebtoken's, the
//!   canonical JSON serde_json_canonicalizer's, the digest sha2's.
//! - Single use (`jti`) is the executor's to keep (its own store): this
//!   crate checks everything that a receipt itself can prove.

mod claims;
mod digest;
mod signer;
mod verify;

pub use claims::{
    Actor, Approver, ChainLink, Detail, META_IDEMPOTENCY_KEY, META_RECEIPT, Policy, Receipt, TYPE,
};
pub use digest::arguments_sha256;
pub use signer::Signer;
pub use verify::{Expect, Keys, Refusal, unverified_claims, verify};
