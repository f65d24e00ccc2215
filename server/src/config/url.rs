//! The one URL check of agent.yaml: every URL the agent dials (LLM
//! endpoints, MCP servers, sub-agents, OIDC issuers, webhooks) must be
//! http(s). Its own file because both the auth section and the rest of
//! the validation use it.

/// Accepts `http://host…` and `https://host…`.
pub(crate) fn check_http_url(url: &str) -> Result<(), String> {
    let rest = url
        .strip_prefix("http://")
        .or_else(|| url.strip_prefix("https://"));
    match rest {
        Some(r) if !r.is_empty() && !r.starts_with('/') && !url.contains(char::is_whitespace) => {
            Ok(())
        }
        _ => Err(format!(
            "`{url}` is not an http(s) URL: write e.g. http://localhost:9000/mcp"
        )),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn urls_must_be_http() {
        assert!(check_http_url("http://localhost:1/mcp").is_ok());
        assert!(check_http_url("https://a.example").is_ok());
        assert!(check_http_url("ftp://a").is_err());
        assert!(check_http_url("http://").is_err());
        assert!(check_http_url("http:// a").is_err());
    }
}
