//! What the agent's tests and benchmarks share, kept out of the shipped
//! library (a dev-dependency of `server`):
//! - [`fake_llm`]: a fake LLM provider speaking the three wire formats;
//! - [`grpc`]: a bare client of A2A's gRPC binding;
//! - [`process`]: the one harness that starts a binary, waits for its
//!   ready line, captures its log and kills it;
//! - [`postgres`]: a fresh database in the throwaway test cluster;
//! - [`slack`]: a stand-in for Slack that signs button clicks as Slack does;
//! - [`webhook`]: a notification receiver that checks signatures and
//!   answers as a script says (fail, stall, succeed).

pub mod fake_llm;
pub mod grpc;
pub mod postgres;
pub mod process;
pub mod slack;
pub mod webhook;
