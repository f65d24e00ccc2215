//! agent.yaml: parsing, defaults, `${VAR}` expansion and validation.
//!
//! Loading runs in four steps, each with errors that name the file and the
//! key path: YAML syntax → `${VAR}` expansion on the YAML tree → typed
//! decoding with unknown keys rejected ("did you mean …?") → the semantic
//! rules of [`validate`]. A config that loads is one the agent can run; the
//! server never discovers a config mistake in the middle of a conversation.

mod auth;
mod error;
mod expand;
mod model;
mod notifications;
mod schema;
mod store;
mod suggest;
mod url;
mod validate;

pub use crate::policy::config::{
    ApprovalsConfig, OnExpiry, OnToolChange, PredicateConfig, RuleAction, RuleConfig,
    UnannotatedTools,
};
pub use auth::{
    AuditConfig, AuthConfig, AuthMode, MIN_TOKEN_LEN, OidcConfig, ProxyConfig, ROLE_NAMES, Secret,
    TokenConfig,
};
pub use error::{ConfigError, Problem};
pub use model::{ModelRef, Provider, parse_model};
pub use notifications::{
    EVENTS as NOTIFICATION_EVENTS, Format, InteractiveConfig, NotificationsConfig, SmtpConfig,
    TargetConfig,
};
pub use schema::{
    A2aAgentConfig, A2aBinding, A2aCardMode, ApprovalsMode, Config, DEFAULT_MAX_ITERATIONS,
    LegacyMcp, LlmConfig, MAX_ITERATIONS_CAP, McpAuth, McpServerConfig, NodeConfig, NodeKind,
    OnQuestion, OnReject, QuestionsConfig,
};
pub use store::{StoreBackend, StoreConfig};
pub use validate::{USER_MESSAGE_KEY, placeholders};

use serde_yaml::Value;
use std::path::{Path, PathBuf};

/// The default config path of `agent --config`.
pub const DEFAULT_CONFIG_PATH: &str = "config/agent.yaml";

/// Reads and validates the config file at `path`, expanding `${VAR}` from the
/// process environment.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let text = std::fs::read_to_string(path).map_err(|source| ConfigError::Read {
        file: path.to_path_buf(),
        source,
    })?;
    parse(&text, path, &|name| std::env::var(name).ok())
}

/// Parses and validates config text; `file` names it in errors and anchors
/// relative `scripted:` paths; `env` looks up `${VAR}`.
pub fn parse(
    text: &str,
    file: &Path,
    env: &dyn Fn(&str) -> Option<String>,
) -> Result<Config, ConfigError> {
    let invalid = |problems: Vec<Problem>| ConfigError::Invalid {
        file: file.to_path_buf(),
        problems,
    };
    let mut value: Value = if text.trim().is_empty() {
        Value::Mapping(Default::default())
    } else {
        serde_yaml::from_str(text).map_err(|e| ConfigError::Syntax {
            file: file.to_path_buf(),
            message: e.to_string(),
        })?
    };
    match value {
        Value::Null => value = Value::Mapping(Default::default()),
        Value::Mapping(_) => {}
        _ => {
            return Err(invalid(vec![Problem::new(
                "",
                "the file must be a YAML mapping of keys such as `name:`, `llm:`, `mcp_servers:`",
            )]));
        }
    }
    let mut problems = auth::literal_secrets(&value);
    expand::expand_tree(&mut value, env, &mut problems);
    if !problems.is_empty() {
        return Err(invalid(problems));
    }
    // The `approvals:` section in force, as a receipt's `policy.sha256`
    // names it (RECEIPTS.md §1): the JCS digest of its JSON form.
    let approvals = value
        .get("approvals")
        .and_then(|a| serde_json::to_value(a).ok())
        .filter(|a| !a.is_null())
        .unwrap_or_else(|| serde_json::json!({}));
    let approvals_sha256 = receipts::arguments_sha256(&approvals);
    let config: Config = serde_path_to_error::deserialize(value).map_err(|e| {
        let path = e.path().to_string();
        let path = if path == "." { String::new() } else { path };
        invalid(vec![Problem::new(
            path,
            suggest::explain(&e.inner().to_string()),
        )])
    })?;
    let base_dir = file
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_else(|| PathBuf::from("."));
    let problems = validate::validate(&config, &base_dir);
    if problems.is_empty() {
        let mut config = config;
        config.approvals_sha256 = approvals_sha256;
        config.source_digest = crate::domain::digest::hex(&sha2::Digest::finalize(
            <sha2::Sha256 as sha2::Digest>::new_with_prefix(text.as_bytes()),
        ));
        Ok(config)
    } else {
        Err(invalid(problems))
    }
}

impl Config {
    /// Every `a2a` entry: the top level's, then each node's, depth first.
    pub(crate) fn sub_agent_entries(&self) -> Vec<&A2aAgentConfig> {
        self.sub_agent_paths().into_iter().map(|(_, a)| a).collect()
    }

    /// [`Config::sub_agent_entries`] with each entry's key path
    /// (`a2a[0]`, `agent.agents[1].a2a[0]`), for problems that name it.
    pub(crate) fn sub_agent_paths(&self) -> Vec<(String, &A2aAgentConfig)> {
        fn walk<'a>(n: &'a NodeConfig, at: &str, out: &mut Vec<(String, &'a A2aAgentConfig)>) {
            let here = n.a2a.iter().enumerate();
            out.extend(here.map(|(i, a)| (format!("{at}.a2a[{i}]"), a)));
            for (i, c) in n.agents.iter().enumerate() {
                walk(c, &format!("{at}.agents[{i}]"), out);
            }
        }
        let mut out: Vec<_> = (self.a2a.iter().enumerate())
            .map(|(i, a)| (format!("a2a[{i}]"), a))
            .collect();
        if let Some(root) = &self.agent {
            walk(root, "agent", &mut out);
        }
        out
    }

    /// `mcp_servers` plus the legacy `mcp:` entry (named `mcp`), in order.
    pub fn effective_mcp_servers(&self) -> Vec<McpServerConfig> {
        let mut all = Vec::with_capacity(self.mcp_servers.len() + 1);
        if let Some(m) = &self.mcp {
            all.push(McpServerConfig {
                name: "mcp".into(),
                url: None,
                headers: Default::default(),
                forward_auth: true,
                command: Some(m.command.clone()),
                args: m.args.clone(),
                env: m.env.clone(),
                on_question: Default::default(),
                question_expires_in: None,
                auth: None,
                idempotent: false,
            });
        }
        all.extend(self.mcp_servers.iter().cloned());
        all
    }

    /// The names a rule's `server:` may use: the MCP servers, then the
    /// sub-agents.
    pub fn tool_servers(&self) -> Vec<String> {
        let mut out: Vec<String> = self
            .effective_mcp_servers()
            .into_iter()
            .map(|s| s.name)
            .collect();
        out.extend(self.sub_agents());
        out.dedup();
        out
    }

    /// The sub-agents' names: top-level `a2a`, node-level `a2a` lists and
    /// `a2a` nodes.
    pub fn sub_agents(&self) -> Vec<String> {
        fn walk(n: &NodeConfig, out: &mut Vec<String>) {
            if n.kind == NodeKind::A2a {
                out.push(n.name.clone());
            }
            out.extend(n.a2a.iter().map(|a| a.name.clone()));
            for c in &n.agents {
                walk(c, out);
            }
        }
        let mut out: Vec<String> = self.a2a.iter().map(|a| a.name.clone()).collect();
        if let Some(root) = &self.agent {
            walk(root, &mut out);
        }
        out
    }

    /// The compiled approval rules (checked when the config loaded).
    pub fn policy(&self) -> crate::policy::Policy {
        crate::policy::Policy::compile(&self.approvals, &self.tool_servers()).unwrap_or_default()
    }

    /// The path of the SQLite database.
    pub fn db_path(&self) -> PathBuf {
        self.data_dir.join("agent.db")
    }
}

#[cfg(test)]
mod tests;
