//! The agent's integration tests: one test binary (one link, one build of
//! `support`), one module per suite. Run one suite with
//! `cargo nextest run -p server --features a2a-tck -E 'test(/^agent_flow::/)'`
//! or `cargo test -p server --features a2a-tck --test it -- agent_flow::`.

mod a2a_chain;
mod support;
// The A2A TCK behaviours compile only with the `a2a-tck` feature.
#[cfg(feature = "a2a-tck")]
mod a2a_conformance;
mod a2a_discovery;
mod a2a_grpc;
mod a2a_interop;
mod a2a_push;
mod a2a_rest;
mod a2a_roles;
mod a2a_signing;
mod ag_ui;
mod agent_flow;
mod api_conversations;
mod approval_rules;
mod auth_chain;
mod auth_oidc;
mod auth_proxy;
mod auth_tokens;
mod filesystem_agent;
mod grants;
mod idempotency;
mod live_api;
mod llm_providers;
mod mcp_conformance;
mod mcp_endpoint;
mod mcp_hints;
mod mcp_limits;
mod mcp_questions;
mod metrics;
mod notifications;
mod orchestration;
mod receipts;
mod replicas;
mod seed_configs;
mod shutdown;
mod slack_interactive;
mod startup;
mod third_party_mcp;
mod traces;
mod ui_forms;
mod wire_specs;
