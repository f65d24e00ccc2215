//! `{key}` placeholders in node prompts, resolved from session state.

use std::collections::BTreeMap;

/// Replaces `{key}` placeholders with session state; a key no node has
/// written yet becomes empty (config loading already refused keys that no
/// node writes). Braces around anything else are left alone.
pub(crate) fn resolve(prompt: &str, state: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        match after.find(['}', '{']) {
            Some(end) if after.as_bytes()[end] == b'}' && is_key(&after[..end]) => {
                if let Some(v) = state.get(&after[..end]) {
                    out.push_str(v);
                }
                rest = &after[end + 1..];
            }
            _ => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

fn is_key(s: &str) -> bool {
    let mut c = s.chars();
    matches!(c.next(), Some(f) if f.is_ascii_alphabetic() || f == '_')
        && c.all(|x| x.is_ascii_alphanumeric() || x == '_')
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn placeholders_resolve_from_state() {
        let state = BTreeMap::from([
            ("analysis".to_string(), "3 items".to_string()),
            ("user_message".to_string(), "hi".to_string()),
        ]);
        assert_eq!(
            resolve(
                "Do {user_message} with {analysis}; JSON {\"a\": 1} {later}.",
                &state
            ),
            "Do hi with 3 items; JSON {\"a\": 1} ."
        );
        assert_eq!(resolve("{{analysis}}", &state), "{3 items}");
        assert_eq!(resolve("open {analysis", &state), "open {analysis");
    }
}
