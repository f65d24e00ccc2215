//! `${VAR}` expansion in agent.yaml string values.
//!
//! Expansion runs on the parsed YAML tree, not on the raw text, so a value
//! holding quotes or newlines cannot change the document's structure. Forms:
//! `${VAR}` (an error naming the key if VAR is unset), `${VAR:-default}`
//! (default when unset or empty) and `$${` for a literal `${`. A value that is
//! exactly one placeholder and expands to a number or boolean becomes that
//! scalar, so `port: ${PORT:-8080}` works. Secrets belong in the environment
//! and reach the config only this way.

use super::error::Problem;
use serde_yaml::Value;

/// Expands every string in `value`; `lookup` reads the environment.
pub fn expand_tree(
    value: &mut Value,
    lookup: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) {
    walk(value, String::new(), lookup, problems);
}

fn walk(
    value: &mut Value,
    path: String,
    lookup: &dyn Fn(&str) -> Option<String>,
    problems: &mut Vec<Problem>,
) {
    match value {
        Value::String(s) => {
            if !s.contains('$') {
                return;
            }
            match expand_str(s, lookup) {
                Ok(expanded) => {
                    let whole = is_single_placeholder(s);
                    *value = if whole {
                        as_scalar(&expanded).unwrap_or(Value::String(expanded))
                    } else {
                        Value::String(expanded)
                    };
                }
                Err(msg) => problems.push(Problem::new(path, msg)),
            }
        }
        Value::Sequence(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                walk(item, format!("{path}[{i}]"), lookup, problems);
            }
        }
        Value::Mapping(map) => {
            for (k, v) in map.iter_mut() {
                let key = match k {
                    Value::String(s) => s.clone(),
                    other => serde_yaml::to_string(other)
                        .unwrap_or_default()
                        .trim()
                        .to_string(),
                };
                let child = if path.is_empty() {
                    key
                } else {
                    format!("{path}.{key}")
                };
                walk(v, child, lookup, problems);
            }
        }
        Value::Tagged(t) => walk(&mut t.value, path, lookup, problems),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// Expands the placeholders of one string.
pub fn expand_str(s: &str, lookup: &dyn Fn(&str) -> Option<String>) -> Result<String, String> {
    let mut out = String::with_capacity(s.len());
    let mut rest = s;
    while let Some(pos) = rest.find('$') {
        out.push_str(&rest[..pos]);
        let after = &rest[pos..];
        if let Some(tail) = after.strip_prefix("$${") {
            out.push_str("${");
            rest = tail;
        } else if let Some(tail) = after.strip_prefix("${") {
            let Some(end) = tail.find('}') else {
                return Err(format!(
                    "unclosed `${{` in {s:?}: write ${{VAR}}, or $${{ for a literal"
                ));
            };
            let inner = &tail[..end];
            let (name, default) = match inner.split_once(":-") {
                Some((n, d)) => (n, Some(d)),
                None => (inner, None),
            };
            if name.is_empty() || !name.chars().all(|c| c.is_ascii_alphanumeric() || c == '_') {
                return Err(format!(
                    "`${{{inner}}}` is not a valid variable reference: use ${{NAME}} or ${{NAME:-default}}"
                ));
            }
            match (
                lookup(name).filter(|v| !v.is_empty() || default.is_none()),
                default,
            ) {
                (Some(v), _) => out.push_str(&v),
                (None, Some(d)) => out.push_str(d),
                (None, None) => {
                    return Err(format!(
                        "environment variable {name} is not set: export it, or write ${{{name}:-default}}"
                    ));
                }
            }
            rest = &tail[end + 1..];
        } else {
            out.push('$');
            rest = &after[1..];
        }
    }
    out.push_str(rest);
    Ok(out)
}

fn is_single_placeholder(s: &str) -> bool {
    s.starts_with("${") && s.ends_with('}') && s.matches("${").count() == 1 && !s.starts_with("$${")
}

fn as_scalar(s: &str) -> Option<Value> {
    match serde_yaml::from_str::<Value>(s) {
        Ok(v @ (Value::Number(_) | Value::Bool(_))) => Some(v),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(name: &str) -> Option<String> {
        match name {
            "HOST" => Some("example.org".into()),
            "PORT" => Some("9090".into()),
            "EMPTY" => Some(String::new()),
            _ => None,
        }
    }

    #[test]
    fn expands_set_variables_and_defaults() {
        assert_eq!(
            expand_str("http://${HOST}:1/x", &env).unwrap(),
            "http://example.org:1/x"
        );
        assert_eq!(expand_str("${NOPE:-fallback}", &env).unwrap(), "fallback");
        assert_eq!(expand_str("${EMPTY:-d}", &env).unwrap(), "d");
        assert_eq!(
            expand_str("cost $5 and $${HOST}", &env).unwrap(),
            "cost $5 and ${HOST}"
        );
    }

    #[test]
    fn an_unset_variable_is_an_error_naming_it() {
        let e = expand_str("Bearer ${TOKEN}", &env).unwrap_err();
        assert!(e.contains("TOKEN is not set"), "{e}");
        assert!(expand_str("${HOST", &env).unwrap_err().contains("unclosed"));
        assert!(
            expand_str("${a-b}", &env)
                .unwrap_err()
                .contains("not a valid variable")
        );
    }

    #[test]
    fn tree_expansion_reports_the_key_path_and_types_whole_values() {
        let mut v: Value = serde_yaml::from_str(
            "port: ${PORT}\nname: ${HOST}\nmcp_servers:\n  - headers: {Authorization: 'Bearer ${TOKEN}'}\n",
        )
        .unwrap();
        let mut problems = Vec::new();
        expand_tree(&mut v, &env, &mut problems);
        assert_eq!(v["port"], Value::Number(9090.into()));
        assert_eq!(v["name"], Value::String("example.org".into()));
        assert_eq!(problems.len(), 1);
        assert_eq!(problems[0].path, "mcp_servers[0].headers.Authorization");
    }
}
