//! What the agent's tests and benchmarks share, kept out of the shipped
//! library (a dev-dependency of `server`):
//! - [`fake_llm`]: a fake LLM provider speaking the three wire formats;
//! - [`process`]: the one harness that starts a binary, waits for its
//!   ready line, captures its log and kills it.

pub mod fake_llm;
pub mod process;
