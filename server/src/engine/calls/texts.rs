//! What people and the model read about a call: its one-line description
//! on an approval card, and the result text of a call that did not run
//! because an operator rejected it or its approval expired. Shared by the
//! call states, delegation, decisions and expiry.

use serde_json::Value;

/// The result text of a call the operator rejected.
pub(crate) fn declined_text(reason: Option<&str>) -> String {
    match reason.map(str::trim).filter(|r| !r.is_empty()) {
        Some(r) => {
            format!("The operator rejected this action, so it was not run. Their reason: {r}")
        }
        None => "The operator rejected this action, so it was not run.".to_string(),
    }
}

/// What the model is told about a call whose approval expired (`why`:
/// the approval's recorded reason, "the approval expired after 2s").
pub(crate) fn expired_text(why: Option<&str>) -> String {
    let why = why.unwrap_or("the approval expired");
    format!("Not run: {why}, and nobody decided in time.")
}

/// A readable one-line description of a call, for the approval card.
pub(crate) fn describe_call(tool: &str, server: Option<&str>, args: &Value) -> String {
    let args_text = match args {
        Value::Object(m) if !m.is_empty() => m
            .iter()
            .map(|(k, v)| {
                let mut s = v.to_string();
                if s.chars().count() > 120 {
                    s = format!("{}…", s.chars().take(120).collect::<String>());
                }
                format!("{k}={s}")
            })
            .collect::<Vec<_>>()
            .join(", "),
        Value::Object(_) | Value::Null => String::new(),
        other => other.to_string(),
    };
    match server {
        Some(s) => format!("Run `{tool}({args_text})` on {s}"),
        None => format!("Run `{tool}({args_text})`"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn descriptions_show_tool_server_and_arguments() {
        assert_eq!(
            describe_call(
                "resources_add",
                Some("resources"),
                &json!({"name": "apples", "value": 12})
            ),
            "Run `resources_add(name=\"apples\", value=12)` on resources"
        );
        assert_eq!(describe_call("x", None, &json!({})), "Run `x()`");
        let long = describe_call("x", None, &json!({"s": "a".repeat(500)}));
        assert!(long.chars().count() < 200, "{long}");
    }

    #[test]
    fn declined_text_carries_the_reason() {
        assert!(declined_text(Some("too risky")).ends_with("Their reason: too risky"));
        assert!(!declined_text(Some("  ")).contains("reason"));
    }
}
