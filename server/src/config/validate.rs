//! The rules a parsed agent.yaml must satisfy beyond its types.
//!
//! All problems are collected, not just the first, so one edit-and-restart
//! cycle fixes them all. Each names its key path and the fix.

use super::error::Problem;
use super::model::{Provider, parse_model};
use super::schema::{A2aAgentConfig, Config, MAX_ITERATIONS_CAP, NodeConfig, NodeKind};
use super::url::check_http_url;
use std::collections::{BTreeSet, HashMap};
use std::path::Path;

/// The placeholder every prompt may use.
pub const USER_MESSAGE_KEY: &str = "user_message";

/// Checks `config`; `base_dir` is the config file's folder (for `scripted:` paths).
pub fn validate(config: &Config, base_dir: &Path) -> Vec<Problem> {
    let mut p = Vec::new();
    if config.name.trim().is_empty() {
        p.push(Problem::new("name", "must not be empty"));
    }
    if config.host.trim().is_empty() {
        p.push(Problem::new(
            "host",
            "must not be empty: use 0.0.0.0 for every interface or 127.0.0.1 for this machine only",
        ));
    }
    if config.data_dir.as_os_str().is_empty() {
        p.push(Problem::new(
            "data_dir",
            "must not be empty (default ./data)",
        ));
    }
    if let Some(url) = &config.public_url
        && let Err(e) = check_http_url(url)
    {
        p.push(Problem::new("public_url", e));
    }
    if config.max_body_bytes < 1024 {
        p.push(Problem::new(
            "max_body_bytes",
            format!(
                "{} is too small: use at least 1024 (default 1048576)",
                config.max_body_bytes
            ),
        ));
    }
    config.store.problems(&mut p);
    check_model(&config.llm.model, "llm.model", base_dir, &mut p);
    if !(1..=100).contains(&config.llm.max_steps) {
        p.push(Problem::new(
            "llm.max_steps",
            format!(
                "{} is out of range: use 1 to 100 (default 10)",
                config.llm.max_steps
            ),
        ));
    }
    if !(1..=600).contains(&config.llm.timeout_seconds) {
        p.push(Problem::new(
            "llm.timeout_seconds",
            format!(
                "{} is out of range: use 1 to 600 (default 60)",
                config.llm.timeout_seconds
            ),
        ));
    }
    if config.llm.max_tokens == 0 {
        p.push(Problem::new(
            "llm.max_tokens",
            "must be at least 1 (default 4096)",
        ));
    }
    if !(1..=64).contains(&config.a2a_max_hops) {
        p.push(Problem::new(
            "a2a_max_hops",
            format!(
                "{} is out of range: use 1 to 64 (default 8)",
                config.a2a_max_hops
            ),
        ));
    }
    check_mcp_servers(config, &mut p);
    check_a2a_list(&config.a2a, "a2a", &mut p);
    check_trusted_names(config, &mut p);
    check_shared_urls(config, &mut p);
    check_card_signing(config, &mut p);
    check_receipts(config, &mut p);
    for (i, e) in config.a2a_extensions.iter().enumerate() {
        if e.uri.trim().is_empty() || e.uri.contains(',') || e.uri.contains(char::is_whitespace) {
            p.push(Problem::new(
                format!("a2a_extensions[{i}].uri"),
                format!(
                    "{:?} is not an extension URI: one URI, no spaces or commas",
                    e.uri
                ),
            ));
        }
    }
    if let Some(root) = &config.agent {
        check_tree(root, base_dir, &mut p);
    }
    super::auth::validate(&config.auth, &config.audit, &mut p);
    super::notifications::validate(&config.notifications, &mut p);
    check_slack_users(config, &mut p);
    if let Err(problems) = crate::policy::Policy::compile(&config.approvals, &config.tool_servers())
    {
        p.extend(problems);
    }
    check_quorum_needs_principals(config, &mut p);
    p
}

/// A quorum counts distinct principals; in auth mode `none` there are
/// none (every browser, or any `X-Session-ID`, would count as one more
/// approver), so a rule asking for more than one approval cannot mean what
/// it says there.
fn check_quorum_needs_principals(config: &Config, p: &mut Vec<Problem>) {
    if config.auth.mode != super::auth::AuthMode::None {
        return;
    }
    for (i, r) in config.approvals.rules.iter().enumerate() {
        if let Some(q) = r.quorum.filter(|q| *q > 1) {
            p.push(Problem::new(
                format!("approvals.rules[{i}].quorum"),
                format!(
                    "rule `{}` asks for {q} approvals, but a quorum needs auth.mode tokens, oidc or proxy: in mode none nobody is told apart, so one person in two browsers would count twice; set auth.mode, or remove quorum",
                    r.name
                ),
            ));
        }
    }
}

/// Header names and values that can be sent as written.
fn check_headers(
    headers: &std::collections::BTreeMap<String, String>,
    at: &str,
    p: &mut Vec<Problem>,
) {
    for (k, v) in headers {
        if axum::http::HeaderName::from_bytes(k.as_bytes()).is_err() {
            p.push(Problem::new(
                format!("{at}.headers"),
                format!("`{k}` is not a valid header name"),
            ));
        } else if axum::http::HeaderValue::from_str(v).is_err() {
            p.push(Problem::new(
                format!("{at}.headers.{k}"),
                "is not a valid header value (no line breaks or control characters)",
            ));
        }
    }
}

fn check_mcp_servers(config: &Config, p: &mut Vec<Problem>) {
    let mut seen: HashMap<&str, String> = HashMap::new();
    if config.mcp.is_some() {
        seen.insert("mcp", "mcp".into());
    }
    if let Some(t) = &config.questions.expires_in
        && let Err(e) = crate::domain::duration::parse(t)
    {
        p.push(Problem::new("questions.expires_in", e));
    }
    for (i, s) in config.mcp_servers.iter().enumerate() {
        let at = format!("mcp_servers[{i}]");
        if let Some(t) = &s.question_expires_in
            && let Err(e) = crate::domain::duration::parse(t)
        {
            p.push(Problem::new(format!("{at}.question_expires_in"), e));
        }
        check_name(&s.name, &format!("{at}.name"), p);
        if let Some(first) = seen.insert(s.name.as_str(), at.clone()) {
            p.push(Problem::new(
                format!("{at}.name"),
                format!(
                    "duplicate MCP server name `{}` (also at {first}): names must be unique",
                    s.name
                ),
            ));
        }
        match (&s.url, &s.command) {
            (Some(_), Some(_)) => p.push(Problem::new(&at, "has both `url` and `command`: use `url` for a Streamable HTTP server or `command` for a stdio server, not both")),
            (None, None) => p.push(Problem::new(&at, "needs `url` (Streamable HTTP, e.g. http://localhost:9000/mcp) or `command` (stdio, e.g. mcp-resources)")),
            (Some(url), None) => {
                if let Err(e) = check_http_url(url) {
                    p.push(Problem::new(format!("{at}.url"), e));
                }
                if !s.args.is_empty() || !s.env.is_empty() {
                    p.push(Problem::new(&at, "`args` and `env` apply to stdio servers (`command`), not to `url`"));
                }
                if let Some(auth) = &s.auth {
                    check_mcp_auth(auth, url, &at, p);
                }
            }
            (None, Some(cmd)) => {
                if cmd.trim().is_empty() {
                    p.push(Problem::new(format!("{at}.command"), "must not be empty"));
                }
                if !s.headers.is_empty() {
                    p.push(Problem::new(format!("{at}.headers"), "headers apply to HTTP servers (`url`), not to `command`"));
                }
                if s.auth.is_some() {
                    p.push(Problem::new(format!("{at}.auth"), "OAuth applies to HTTP servers (`url`), not to `command`"));
                }
            }
        }
    }
    if let Some(m) = &config.mcp
        && m.command.trim().is_empty()
    {
        p.push(Problem::new("mcp.command", "must not be empty"));
    }
}

/// `mcp_servers[].auth`: the client secret goes only where the operator
/// says (`token_url`, or the token endpoint of `issuer`), never where the
/// MCP server points; and it, like the token the MCP server then
/// receives, crosses a network only over `https`.
fn check_mcp_auth(auth: &super::schema::McpAuth, url: &str, at: &str, p: &mut Vec<Problem>) {
    let super::schema::McpAuth::ClientCredentials {
        client_id,
        token_url,
        issuer,
        ..
    } = auth;
    if client_id.trim().is_empty() {
        p.push(Problem::new(
            format!("{at}.auth.client_id"),
            "must not be empty",
        ));
    }
    match (token_url, issuer) {
        (None, None) => p.push(Problem::new(
            format!("{at}.auth"),
            "needs `token_url` (the token endpoint the client secret is posted to) or `issuer` \
             (the authorization server the MCP server must name; its token endpoint comes from \
             its own metadata): without either the secret would go wherever the MCP server points",
        )),
        (Some(_), Some(_)) => p.push(Problem::new(
            format!("{at}.auth"),
            "has both `token_url` and `issuer`: set one (`token_url` is used as is; `issuer` \
             discovers the token endpoint from that authorization server)",
        )),
        _ => {}
    }
    let keys = [
        ("url", Some(url)),
        ("auth.token_url", token_url.as_deref()),
        ("auth.issuer", issuer.as_deref()),
    ];
    for (key, value) in keys {
        let Some(value) = value else { continue };
        if let Err(e) = check_http_url(value) {
            if key != "url" {
                p.push(Problem::new(format!("{at}.{key}"), e));
            }
            continue;
        }
        match url::Url::parse(value) {
            Ok(u) if crate::domain::net::is_https_or_loopback(&u) => {}
            Ok(_) => p.push(Problem::new(
                format!("{at}.{key}"),
                format!("`{value}` is plain http to another machine: with `auth` the client secret and the token cross the network, so use https:// (http:// only to localhost)"),
            )),
            Err(e) => p.push(Problem::new(format!("{at}.{key}"), format!("`{value}`: {e}"))),
        }
    }
}

/// A sub-agent whose card key is pinned keeps its card pin (the card last
/// trusted, a held one, an admin's acceptance) under its name: the name
/// must mean one agent in the whole config, not one per `a2a` list.
fn check_trusted_names(config: &Config, p: &mut Vec<Problem>) {
    let entries = config.sub_agent_entries();
    let mut told = BTreeSet::new();
    for (i, a) in entries.iter().enumerate() {
        let twice = entries[..i].iter().any(|b| b.name == a.name);
        if twice
            && entries
                .iter()
                .any(|b| b.name == a.name && b.trust.is_some())
            && told.insert(a.name.as_str())
        {
            p.push(Problem::new(
                "a2a",
                format!(
                    "the sub-agent name `{}` is used by more than one `a2a` entry and one of them pins a card key (`trust`): give each a name of its own (the card it trusts is kept by name)",
                    a.name
                ),
            ));
        }
    }
}

/// A sub-agent's discovery settings (`trust`, `binding`) are kept by URL
/// (`a2a::discovery`): entries that name one URL must give the same ones,
/// or one entry's would silently replace another's (a pinned card key
/// dropped, and the card never verified).
fn check_shared_urls(config: &Config, p: &mut Vec<Problem>) {
    let entries = config.sub_agent_paths();
    for (i, (here, a)) in entries.iter().enumerate() {
        let url = a.url.trim_end_matches('/');
        let Some((first, b)) = entries[..i]
            .iter()
            .find(|(_, b)| b.url.trim_end_matches('/') == url)
        else {
            continue;
        };
        let keys = [
            ("trust", a.trust != b.trust),
            ("binding", a.binding != b.binding),
        ];
        for (key, _) in keys.iter().filter(|(_, differs)| *differs) {
            p.push(Problem::new(
                format!("{here}.{key}"),
                format!(
                    "`{here}` and `{first}` both reach `{url}` but give different `{key}`: one agent's card is read once, with one `trust` and one `binding`, so give every entry for that URL the same ones"
                ),
            ));
        }
    }
}

fn check_a2a_list(list: &[A2aAgentConfig], at: &str, p: &mut Vec<Problem>) {
    let mut seen: HashMap<&str, usize> = HashMap::new();
    for (i, a) in list.iter().enumerate() {
        let here = format!("{at}[{i}]");
        if a.name.is_empty()
            || a.name.len() > 60
            || !a
                .name
                .chars()
                .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            p.push(Problem::new(format!("{here}.name"), format!("`{}` is not a valid sub-agent name: use 1 to 60 letters, digits, `_` or `-` (it becomes the tool `a2a_<name>`)", a.name)));
        }
        if let Some(first) = seen.insert(a.name.as_str(), i) {
            p.push(Problem::new(
                format!("{here}.name"),
                format!(
                    "duplicate sub-agent name `{}` (also at {at}[{first}])",
                    a.name
                ),
            ));
        }
        if let Err(e) = check_http_url(&a.url) {
            p.push(Problem::new(format!("{here}.url"), e));
        }
        check_headers(&a.headers, &here, p);
        if let Some(t) = &a.trust {
            let given = [
                t.public_key.is_some(),
                t.public_key_file.is_some(),
                t.jwks_url.is_some(),
            ];
            if given.iter().filter(|g| **g).count() != 1 {
                p.push(Problem::new(
                    format!("{here}.trust"),
                    "give exactly one of public_key (a PEM), public_key_file or jwks_url",
                ));
            }
            if let Some(u) = &t.jwks_url
                && let Err(e) = check_http_url(u)
            {
                p.push(Problem::new(format!("{here}.trust.jwks_url"), e));
            }
            if t.kid.as_deref().is_some_and(|k| k.trim().is_empty()) {
                p.push(Problem::new(
                    format!("{here}.trust.kid"),
                    "must not be empty (leave it out to trust any key id)",
                ));
            }
        }
    }
}

/// `a2a_card_signing`: one key source and a key id.
fn check_card_signing(config: &Config, p: &mut Vec<Problem>) {
    let Some(s) = &config.a2a_card_signing else {
        return;
    };
    if s.key.is_some() == s.key_file.is_some() {
        p.push(Problem::new(
            "a2a_card_signing",
            "give exactly one of key (\"${VAR}\" holding a PEM) or key_file",
        ));
    }
    if s.kid.trim().is_empty() {
        p.push(Problem::new(
            "a2a_card_signing.kid",
            "must not be empty: it names the key in each signature and in /.well-known/jwks.json",
        ));
    }
}

/// `receipts`: a key file, a key id if given, a lifetime a call can use.
fn check_receipts(config: &Config, p: &mut Vec<Problem>) {
    let Some(r) = &config.receipts else {
        return;
    };
    if r.signing_key.as_os_str().is_empty() {
        p.push(Problem::new(
            "receipts.signing_key",
            "must name a PKCS#8 PEM file (P-256 or Ed25519)",
        ));
    }
    if r.kid.as_deref().is_some_and(|k| k.trim().is_empty()) {
        p.push(Problem::new(
            "receipts.kid",
            "must not be empty (leave it out to use the key's thumbprint)",
        ));
    }
    match crate::domain::duration::parse(&r.ttl) {
        Ok(d) if d.as_secs() >= 1 && d.as_secs() <= 86_400 => {}
        Ok(_) => p.push(Problem::new(
            "receipts.ttl",
            "must be between 1s and 24h: a receipt is used when the call runs",
        )),
        Err(e) => p.push(Problem::new("receipts.ttl", e)),
    }
}

fn check_tree(root: &NodeConfig, base_dir: &Path, p: &mut Vec<Problem>) {
    let mut names: HashMap<String, String> = HashMap::new();
    let mut produced: BTreeSet<String> = BTreeSet::new();
    produced.insert(USER_MESSAGE_KEY.to_string());
    collect_outputs(root, &mut produced);
    check_node(root, "agent", false, base_dir, &produced, &mut names, p);
}

fn collect_outputs(node: &NodeConfig, out: &mut BTreeSet<String>) {
    if let Some(k) = &node.output_key {
        out.insert(k.clone());
    }
    for c in &node.agents {
        collect_outputs(c, out);
    }
}

fn check_node(
    n: &NodeConfig,
    at: &str,
    in_loop: bool,
    base_dir: &Path,
    produced: &BTreeSet<String>,
    names: &mut HashMap<String, String>,
    p: &mut Vec<Problem>,
) {
    check_name(&n.name, &format!("{at}.name"), p);
    if let Some(first) = names.insert(n.name.clone(), at.to_string()) {
        p.push(Problem::new(
            format!("{at}.name"),
            format!(
                "duplicate node name `{}` (also at {first}): node names must be unique",
                n.name
            ),
        ));
    }
    let kind = n.kind.as_str();
    if n.kind.has_children() && n.agents.is_empty() {
        p.push(Problem::new(
            format!("{at}.agents"),
            format!("a `{kind}` node needs at least one child in `agents`"),
        ));
    }
    if !n.kind.has_children() && !n.agents.is_empty() {
        p.push(Problem::new(format!("{at}.agents"), format!("a `{kind}` node has no children: move them under a sequential, parallel or loop node")));
    }
    check_kind_keys(n, at, base_dir, p);
    if n.can_exit_loop && !in_loop {
        p.push(Problem::new(
            format!("{at}.can_exit_loop"),
            "only a node inside a `loop` can exit it: move the node under a loop or remove the key",
        ));
    }
    if let Some(k) = &n.output_key
        && !is_identifier(k)
    {
        p.push(Problem::new(format!("{at}.output_key"), format!("`{k}` is not a valid key: use letters, digits and `_`, starting with a letter or `_`")));
    }
    if let Some(prompt) = &n.prompt {
        check_placeholders(prompt, at, produced, p);
    }
    let child_in_loop = in_loop || n.kind == NodeKind::Loop;
    for (i, c) in n.agents.iter().enumerate() {
        check_node(
            c,
            &format!("{at}.agents[{i}]"),
            child_in_loop,
            base_dir,
            produced,
            names,
            p,
        );
    }
}

/// The keys that apply to one node kind only (`url` and `headers` to
/// `a2a`, `model` and node-level `a2a` to `llm`, `max_iterations` to
/// `loop`), each checked where it applies and refused elsewhere.
fn check_kind_keys(n: &NodeConfig, at: &str, base_dir: &Path, p: &mut Vec<Problem>) {
    let kind = n.kind.as_str();
    match n.kind {
        NodeKind::A2a => match &n.url {
            Some(url) => {
                if let Err(e) = check_http_url(url) {
                    p.push(Problem::new(format!("{at}.url"), e));
                }
            }
            None => p.push(Problem::new(
                format!("{at}.url"),
                "an `a2a` node needs `url`, the remote agent's base URL",
            )),
        },
        _ => {
            if n.url.is_some() {
                p.push(Problem::new(
                    format!("{at}.url"),
                    format!("`url` applies to `a2a` nodes, not `{kind}`"),
                ));
            }
            if !n.headers.is_empty() {
                p.push(Problem::new(
                    format!("{at}.headers"),
                    format!("`headers` applies to `a2a` nodes, not `{kind}` (sub-agents of an `llm` node take `headers` in their `a2a` entries)"),
                ));
            }
        }
    }
    check_headers(&n.headers, at, p);
    if let Some(model) = &n.model {
        if n.kind == NodeKind::Llm {
            check_model(model, &format!("{at}.model"), base_dir, p);
        } else {
            p.push(Problem::new(
                format!("{at}.model"),
                format!("`model` applies to `llm` nodes, not `{kind}`"),
            ));
        }
    }
    if !n.a2a.is_empty() && n.kind != NodeKind::Llm {
        p.push(Problem::new(
            format!("{at}.a2a"),
            format!("node-level `a2a` tools apply to `llm` nodes, not `{kind}`"),
        ));
    }
    check_a2a_list(&n.a2a, &format!("{at}.a2a"), p);
    match (n.kind, n.max_iterations) {
        (NodeKind::Loop, Some(m)) if m == 0 || m > MAX_ITERATIONS_CAP => {
            p.push(Problem::new(
                format!("{at}.max_iterations"),
                format!("{m} is out of range: use 1 to {MAX_ITERATIONS_CAP} (default 10)"),
            ));
        }
        (NodeKind::Loop, _) | (_, None) => {}
        (_, Some(_)) => p.push(Problem::new(
            format!("{at}.max_iterations"),
            format!("`max_iterations` applies to `loop` nodes, not `{kind}`"),
        )),
    }
}

/// Every `{key}` of a node's prompt is set by some node's `output_key`.
fn check_placeholders(prompt: &str, at: &str, produced: &BTreeSet<String>, p: &mut Vec<Problem>) {
    for key in placeholders(prompt) {
        if !produced.contains(&key) {
            let known = produced
                .iter()
                .map(|k| format!("{{{k}}}"))
                .collect::<Vec<_>>()
                .join(", ");
            p.push(Problem::new(
                format!("{at}.prompt"),
                format!("uses {{{key}}} but no node sets `output_key: {key}` (available: {known})"),
            ));
        }
    }
}

fn check_model(model: &str, at: &str, base_dir: &Path, p: &mut Vec<Problem>) {
    match parse_model(model) {
        Ok(m) if m.provider == Provider::Scripted => {
            let path = base_dir.join(&m.name);
            if !path.is_file() {
                p.push(Problem::new(at, format!("scripted rules file {} does not exist (paths are relative to the config file)", path.display())));
            }
        }
        Ok(_) => {}
        Err(e) => p.push(Problem::new(at, e)),
    }
}

fn check_name(name: &str, at: &str, p: &mut Vec<Problem>) {
    if name.is_empty()
        || !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '_' | '-' | '.'))
    {
        p.push(Problem::new(
            at,
            format!("`{name}` is not a valid name: use letters, digits, `_`, `-` or `.`"),
        ));
    }
}

fn is_identifier(s: &str) -> bool {
    let mut chars = s.chars();
    matches!(chars.next(), Some(c) if c.is_ascii_alphabetic() || c == '_')
        && chars.all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// The `{key}` placeholders of a prompt. Braces around anything that is not
/// an identifier (JSON examples, `{ }`) are left alone.
pub fn placeholders(prompt: &str) -> Vec<String> {
    let mut out = Vec::new();
    let mut rest = prompt;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find(['}', '{']) {
            Some(end) if after.as_bytes()[end] == b'}' => {
                let inner = &after[..end];
                if is_identifier(inner) && !out.iter().any(|k| k == inner) {
                    out.push(inner.to_string());
                }
                rest = &after[end + 1..];
            }
            Some(end) => rest = &after[end..],
            None => break,
        }
    }
    out
}

/// Interactive Slack targets decide as the principals their `users` name,
/// with those principals' roles: in mode `tokens` each must be a token's
/// name (a typo would only show at the first click); in mode `proxy` no
/// roles are known here without a request from the proxy, so Slack
/// cannot decide at all.
fn check_slack_users(config: &Config, p: &mut Vec<Problem>) {
    for (i, t) in config.notifications.targets.iter().enumerate() {
        let Some(inter) = &t.interactive else {
            continue;
        };
        let at = format!("notifications.targets[{i}].interactive.users");
        match config.auth.mode {
            super::auth::AuthMode::Proxy => p.push(Problem::new(
                at,
                "Slack decisions need the mapped principals' roles, which in auth mode proxy only the proxy knows: use mode tokens or oidc, or leave out `interactive`",
            )),
            super::auth::AuthMode::Tokens => {
                for (id, who) in &inter.users {
                    if !config.auth.tokens.iter().any(|tk| &tk.name == who) {
                        p.push(Problem::new(
                            format!("{at}.{id}"),
                            format!("{who:?} is not the name of any auth.tokens entry, so it has no roles to decide with"),
                        ));
                    }
                }
            }
            super::auth::AuthMode::None | super::auth::AuthMode::Oidc => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_are_identifiers_in_braces() {
        assert_eq!(
            placeholders("Use {analysis} and {user_message}, not {\"a\": 1} or { } or {analysis}"),
            vec!["analysis", "user_message"]
        );
        assert_eq!(placeholders("{{nested}}"), vec!["nested"]);
        assert!(placeholders("no braces").is_empty());
        assert!(placeholders("unclosed {key").is_empty());
    }
}
