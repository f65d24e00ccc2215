//! Where the client secret of `mcp_servers[].auth: {issuer}` may go: to
//! the token endpoint that the configured issuer's own metadata names, and
//! only once the MCP server's protected resource metadata (RFC 9728) names
//! that issuer too.
//!
//! rmcp's discovery follows whichever authorization server the MCP server
//! names, so a malicious or compromised MCP server could have the secret
//! posted to a host of its choosing (issue 53). Here the MCP server only
//! confirms the operator's choice: every request goes to the MCP server's
//! own origin (its metadata) or to the configured issuer (RFC 8414 /
//! OpenID metadata), never to a host the MCP server made up, and a
//! mismatch makes the server unavailable before anything is posted.

use rmcp::transport::auth::{AuthorizationMetadata, WWWAuthenticateParams};
use serde::Deserialize;
use url::Url;

/// The largest metadata document read.
const MAX_BODY: usize = 256 * 1024;
/// How many named servers a problem quotes (the names come from the MCP
/// server, so they are bounded).
const QUOTED: usize = 3;

/// RFC 9728 protected resource metadata, the fields read here.
#[derive(Deserialize)]
struct ResourceMetadata {
    #[serde(default)]
    authorization_servers: Vec<String>,
}

/// The metadata of `issuer` after the MCP server at `resource` (its 401
/// said `challenge`) named it; `Err` says why nothing may be posted.
pub(super) async fn issuer_metadata(
    http: &reqwest::Client,
    resource: &str,
    issuer: &str,
    challenge: Option<&str>,
) -> Result<AuthorizationMetadata, String> {
    let resource = Url::parse(resource).map_err(|e| format!("`{resource}`: {e}"))?;
    let named = named_servers(http, &resource, challenge).await.map_err(|e| {
        format!("{e}; the MCP server does not confirm the configured `auth.issuer` {issuer}, so the client secret was not sent")
    })?;
    if !named.iter().any(|n| same_issuer(n, issuer)) {
        let quoted: Vec<String> = named
            .iter()
            .take(QUOTED)
            .map(|n| format!("`{}`", n.chars().take(200).collect::<String>()))
            .collect();
        return Err(format!(
            "the MCP server names the authorization server {} in its protected resource metadata, not the configured `auth.issuer` {issuer}: the client secret was not sent",
            quoted.join(", ")
        ));
    }
    let metadata = metadata_of(http, issuer).await?;
    let token = Url::parse(&metadata.token_endpoint).map_err(|e| {
        format!(
            "the issuer's token endpoint `{}`: {e}",
            metadata.token_endpoint
        )
    })?;
    if !crate::domain::net::is_https_or_loopback(&token) {
        return Err(format!(
            "the issuer's token endpoint `{token}` is not https: the client secret was not sent"
        ));
    }
    Ok(metadata)
}

/// The authorization servers the MCP server's protected resource metadata
/// names: at the URL its challenge gives when that is on its own origin,
/// else at the RFC 9728 well-known URLs of its origin.
async fn named_servers(
    http: &reqwest::Client,
    resource: &Url,
    challenge: Option<&str>,
) -> Result<Vec<String>, String> {
    let mut candidates: Vec<Url> = challenge
        .and_then(|c| WWWAuthenticateParams::parse(c, resource).resource_metadata_url)
        .filter(|u| u.origin() == resource.origin())
        .into_iter()
        .collect();
    let path = resource.path().trim_end_matches('/');
    for well_known in [
        format!("/.well-known/oauth-protected-resource{path}"),
        "/.well-known/oauth-protected-resource".to_string(),
    ] {
        let mut u = resource.clone();
        u.set_path(&well_known);
        u.set_query(None);
        u.set_fragment(None);
        if !candidates.contains(&u) {
            candidates.push(u);
        }
    }
    let mut last = String::new();
    for url in &candidates {
        match get_json(http, url).await {
            Ok(v) => match serde_json::from_value::<ResourceMetadata>(v) {
                Ok(m) if !m.authorization_servers.is_empty() => return Ok(m.authorization_servers),
                _ => last = format!("{url} names no authorization server"),
            },
            Err(e) => last = e,
        }
    }
    Err(format!(
        "no protected resource metadata (RFC 9728) naming an authorization server ({last})"
    ))
}

/// The issuer's RFC 8414 (or OpenID) metadata, which must call itself
/// `issuer`.
async fn metadata_of(
    http: &reqwest::Client,
    issuer: &str,
) -> Result<AuthorizationMetadata, String> {
    let base = Url::parse(issuer).map_err(|e| format!("`auth.issuer` {issuer}: {e}"))?;
    let path = base.path().trim_end_matches('/').to_string();
    let mut candidates = vec![
        format!("/.well-known/oauth-authorization-server{path}"),
        format!("/.well-known/openid-configuration{path}"),
    ];
    if !path.is_empty() {
        candidates.push(format!("{path}/.well-known/openid-configuration"));
    }
    let mut last = String::new();
    for well_known in candidates {
        let mut url = base.clone();
        url.set_path(&well_known);
        url.set_query(None);
        url.set_fragment(None);
        let mut v = match get_json(http, &url).await {
            Ok(v) => v,
            Err(e) => {
                last = e;
                continue;
            }
        };
        let said = v.get("issuer").and_then(|i| i.as_str()).map(str::to_string);
        if !said.as_deref().is_some_and(|s| same_issuer(s, issuer)) {
            return Err(format!(
                "the metadata at {url} calls its issuer {said:?}, not the configured `auth.issuer` {issuer}: the client secret was not sent"
            ));
        }
        // The client-credentials grant has no authorization endpoint; the
        // type wants one.
        if let Some(o) = v.as_object_mut()
            && !o.contains_key("authorization_endpoint")
            && let Some(t) = o.get("token_endpoint").cloned()
        {
            o.insert("authorization_endpoint".into(), t);
        }
        return serde_json::from_value(v)
            .map_err(|e| format!("the metadata at {url} has no usable token endpoint ({e})"));
    }
    Err(format!(
        "no authorization server metadata for the configured `auth.issuer` {issuer} ({last})"
    ))
}

/// RFC 8414 §3.3: the identifiers are equal; a root issuer with or without
/// its trailing slash is one (URL libraries add it: `https://as` is
/// written `https://as/` by some servers).
fn same_issuer(a: &str, b: &str) -> bool {
    fn root_trimmed(s: &str) -> &str {
        match s.strip_suffix('/') {
            Some(t) if Url::parse(t).is_ok_and(|u| u.path() == "/") => t,
            _ => s,
        }
    }
    root_trimmed(a) == root_trimmed(b)
}

/// A JSON document, not redirected, at most [`MAX_BODY`] bytes.
async fn get_json(http: &reqwest::Client, url: &Url) -> Result<serde_json::Value, String> {
    let mut resp = http
        .get(url.clone())
        .header(reqwest::header::ACCEPT, "application/json")
        .send()
        .await
        .map_err(|e| format!("GET {url}: {e}"))?;
    if !resp.status().is_success() {
        return Err(format!("GET {url}: HTTP {}", resp.status()));
    }
    let mut body = Vec::new();
    while let Some(chunk) = resp.chunk().await.map_err(|e| format!("GET {url}: {e}"))? {
        body.extend_from_slice(&chunk);
        if body.len() > MAX_BODY {
            return Err(format!("GET {url}: more than {MAX_BODY} bytes"));
        }
    }
    serde_json::from_slice(&body).map_err(|e| format!("GET {url}: not JSON ({e})"))
}

#[cfg(test)]
mod tests {
    use super::same_issuer;

    #[test]
    fn a_root_issuer_matches_with_or_without_its_slash_and_nothing_else_does() {
        assert!(same_issuer("http://127.0.0.1:9", "http://127.0.0.1:9/"));
        assert!(same_issuer("https://as/realms/a", "https://as/realms/a"));
        assert!(!same_issuer("https://as/realms/a/", "https://as/realms/a"));
        assert!(!same_issuer("https://as", "https://evil"));
        assert!(!same_issuer("https://as", "https://as.evil"));
        assert!(!same_issuer("https://as/", "https://as:444/"));
    }
}
