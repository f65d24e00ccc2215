//! The answer to a form question, checked against the schema the tool
//! asked with (QUESTIONS.md §2): MCP restricts it to a flat object of
//! string (with `minLength`/`maxLength`/`format`), number, integer (with
//! `minimum`/`maximum`), boolean and enum properties (single choice by
//! `enum` or `oneOf` consts, multiple choice as an array of them), some
//! `required`. A refusal names the field, so a person can fix it.

use serde_json::{Map, Value};

/// `content` with the schema's `default` for every field it omits (SEP-1034:
/// an accepted form without a field means its default, as the form showed).
pub(crate) fn with_defaults(schema: &Value, mut content: Map<String, Value>) -> Map<String, Value> {
    if let Some(props) = schema.get("properties").and_then(Value::as_object) {
        for (name, p) in props {
            if let Some(d) = p.get("default").filter(|d| !d.is_null())
                && content.get(name).is_none_or(Value::is_null)
            {
                content.insert(name.clone(), d.clone());
            }
        }
    }
    content
}

/// Checks `content` against `schema`; the first problem, naming its field.
pub(crate) fn check(schema: &Value, content: &Map<String, Value>) -> Result<(), String> {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    for key in content.keys() {
        if !props.contains_key(key) {
            return Err(format!("`{key}` is not a field of this question"));
        }
    }
    let required: Vec<&str> = schema
        .get("required")
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    for name in required {
        if content.get(name).is_none_or(Value::is_null) {
            return Err(format!("`{name}` is required"));
        }
    }
    for (name, value) in content {
        if value.is_null() {
            continue;
        }
        if let Some(p) = props.get(name) {
            field(name, p, value)?;
        }
    }
    Ok(())
}

/// The choices of an enum property (`enum`, or `oneOf`/`anyOf` consts).
pub(crate) fn choices(p: &Value) -> Option<Vec<String>> {
    if let Some(e) = p.get("enum").and_then(Value::as_array) {
        return Some(
            e.iter()
                .filter_map(Value::as_str)
                .map(String::from)
                .collect(),
        );
    }
    for key in ["oneOf", "anyOf"] {
        if let Some(list) = p.get(key).and_then(Value::as_array) {
            return Some(
                list.iter()
                    .filter_map(|o| o.get("const").and_then(Value::as_str))
                    .map(String::from)
                    .collect(),
            );
        }
    }
    None
}

fn field(name: &str, p: &Value, value: &Value) -> Result<(), String> {
    let kind = p.get("type").and_then(Value::as_str).unwrap_or("string");
    match kind {
        "string" => {
            let Some(s) = value.as_str() else {
                return Err(format!("`{name}` must be a string"));
            };
            if let Some(options) = choices(p)
                && !options.iter().any(|o| o == s)
            {
                return Err(format!("`{name}` must be one of {}", options.join(", ")));
            }
            let len = s.chars().count() as u64;
            if let Some(min) = p.get("minLength").and_then(Value::as_u64)
                && len < min
            {
                return Err(format!("`{name}` must be at least {min} characters"));
            }
            if let Some(max) = p.get("maxLength").and_then(Value::as_u64)
                && len > max
            {
                return Err(format!("`{name}` must be at most {max} characters"));
            }
            match p.get("format").and_then(Value::as_str) {
                Some("email") if !looks_like_email(s) => {
                    Err(format!("`{name}` must be an email address"))
                }
                Some("uri") if url::Url::parse(s).is_err() => {
                    Err(format!("`{name}` must be a URI"))
                }
                Some("date") if chrono::NaiveDate::parse_from_str(s, "%Y-%m-%d").is_err() => {
                    Err(format!("`{name}` must be a date (YYYY-MM-DD)"))
                }
                Some("date-time") if chrono::DateTime::parse_from_rfc3339(s).is_err() => {
                    Err(format!("`{name}` must be a date and time (RFC 3339)"))
                }
                _ => Ok(()),
            }
        }
        "number" | "integer" => {
            let Some(n) = value.as_f64() else {
                return Err(format!("`{name}` must be a number"));
            };
            if kind == "integer" && !(value.is_i64() || value.is_u64()) {
                return Err(format!("`{name}` must be a whole number"));
            }
            if let Some(min) = p.get("minimum").and_then(Value::as_f64)
                && n < min
            {
                return Err(format!("`{name}` must be at least {min}"));
            }
            if let Some(max) = p.get("maximum").and_then(Value::as_f64)
                && n > max
            {
                return Err(format!("`{name}` must be at most {max}"));
            }
            Ok(())
        }
        "boolean" => value
            .is_boolean()
            .then_some(())
            .ok_or_else(|| format!("`{name}` must be true or false")),
        "array" => {
            let Some(items) = value.as_array() else {
                return Err(format!("`{name}` must be a list of choices"));
            };
            let options = p.get("items").and_then(choices).unwrap_or_default();
            for item in items {
                match item.as_str() {
                    Some(s) if options.iter().any(|o| o == s) => {}
                    _ => {
                        return Err(format!("`{name}` may only hold {}", options.join(", ")));
                    }
                }
            }
            let n = items.len() as u64;
            if let Some(min) = p.get("minItems").and_then(Value::as_u64)
                && n < min
            {
                return Err(format!("`{name}` needs at least {min} choices"));
            }
            if let Some(max) = p.get("maxItems").and_then(Value::as_u64)
                && n > max
            {
                return Err(format!("`{name}` takes at most {max} choices"));
            }
            Ok(())
        }
        other => Err(format!(
            "`{name}` has a type this agent cannot take ({other})"
        )),
    }
}

fn looks_like_email(s: &str) -> bool {
    let mut parts = s.splitn(2, '@');
    matches!((parts.next(), parts.next()), (Some(l), Some(d)) if !l.is_empty() && d.contains('.') && !d.starts_with('.') && !d.ends_with('.') && !s.contains(char::is_whitespace))
}

/// The content a plain HTML form posted for `schema` (REACH.md §1): each
/// property's `field.<name>` values, read as its type says (numbers
/// parsed, a checkbox's `true`, several choices as a list); a checkbox
/// left unchecked (its `bool.<name>` marker posted) is `false`; an empty
/// field is left out. `values(name)` gives every value posted for a name.
/// What cannot be read is named, like [`check`] does.
pub(crate) fn from_fields<'a>(
    schema: &Value,
    values: impl Fn(&str) -> Vec<&'a str>,
) -> Result<Map<String, Value>, String> {
    let props = schema
        .get("properties")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    let mut content = Map::new();
    for (name, p) in props {
        let posted = values(&format!("field.{name}"));
        let kind = p.get("type").and_then(Value::as_str).unwrap_or("string");
        let first = posted.first().map(|v| v.trim()).filter(|v| !v.is_empty());
        let value = match kind {
            "boolean" => {
                if first.is_some() {
                    Some(Value::Bool(matches!(first, Some("true" | "on" | "1"))))
                } else if !values(&format!("bool.{name}")).is_empty() {
                    Some(Value::Bool(false))
                } else {
                    None
                }
            }
            "integer" => match first {
                Some(t) => Some(Value::from(
                    t.parse::<i64>()
                        .map_err(|_| format!("`{name}` must be a whole number"))?,
                )),
                None => None,
            },
            "number" => match first {
                Some(t) => {
                    let n: f64 = t
                        .parse()
                        .map_err(|_| format!("`{name}` must be a number"))?;
                    Some(
                        serde_json::Number::from_f64(n)
                            .map(Value::Number)
                            .ok_or_else(|| format!("`{name}` must be a number"))?,
                    )
                }
                None => None,
            },
            "array" => Some(Value::Array(
                posted
                    .iter()
                    .filter(|v| !v.is_empty())
                    .map(|v| Value::String((*v).to_string()))
                    .collect(),
            )),
            _ => first.map(|t| Value::String(t.to_string())),
        };
        if let Some(v) = value {
            content.insert(name, v);
        }
    }
    Ok(content)
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "properties": {
            "env": {"type": "string", "enum": ["staging", "production"]},
            "replicas": {"type": "integer", "minimum": 1, "maximum": 10},
            "confirm": {"type": "boolean"},
            "email": {"type": "string", "format": "email"},
            "tags": {"type": "array", "items": {"anyOf": [{"const": "a"}, {"const": "b"}]}, "maxItems": 2}
        }, "required": ["confirm"]})
    }

    fn obj(v: Value) -> Map<String, Value> {
        v.as_object().cloned().unwrap_or_default()
    }

    #[test]
    fn omitted_fields_take_their_defaults_given_ones_stay() {
        let schema = json!({"type": "object", "properties": {
            "name": {"type": "string", "default": "John Doe"},
            "age": {"type": "integer", "default": 30},
            "verified": {"type": "boolean", "default": true},
            "note": {"type": "string"}
        }});
        let filled = with_defaults(&schema, obj(json!({"age": 41, "name": null})));
        assert_eq!(
            Value::Object(filled),
            json!({"name": "John Doe", "age": 41, "verified": true})
        );
    }

    #[test]
    fn a_posted_form_is_read_by_the_schema() {
        let posted = [
            ("field.env", "production"),
            ("field.replicas", "3"),
            ("bool.confirm", "1"),
            ("field.tags", "a"),
            ("field.tags", "b"),
            ("field.email", ""),
        ];
        let values = |name: &str| -> Vec<&str> {
            posted
                .iter()
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| *v)
                .collect()
        };
        let content = from_fields(&schema(), values).unwrap();
        assert_eq!(
            Value::Object(content),
            json!({"env": "production", "replicas": 3, "confirm": false, "tags": ["a", "b"]})
        );
        let bad = [("field.replicas", "three")];
        let values = |name: &str| -> Vec<&str> {
            bad.iter()
                .filter(|(k, _)| *k == name)
                .map(|(_, v)| *v)
                .collect()
        };
        assert_eq!(
            from_fields(&schema(), values),
            Err("`replicas` must be a whole number".into())
        );
    }

    #[test]
    fn a_valid_answer_passes() {
        let ok = obj(json!({"env": "production", "replicas": 3, "confirm": true, "tags": ["a"]}));
        assert_eq!(check(&schema(), &ok), Ok(()));
    }

    #[test]
    fn each_problem_names_its_field() {
        let cases = [
            (json!({}), "`confirm` is required"),
            (json!({"confirm": "yes"}), "`confirm` must be true or false"),
            (
                json!({"confirm": true, "env": "dev"}),
                "`env` must be one of staging, production",
            ),
            (
                json!({"confirm": true, "replicas": 11}),
                "`replicas` must be at most 10",
            ),
            (
                json!({"confirm": true, "replicas": 1.5}),
                "`replicas` must be a whole number",
            ),
            (
                json!({"confirm": true, "email": "nope"}),
                "`email` must be an email address",
            ),
            (
                json!({"confirm": true, "tags": ["c"]}),
                "`tags` may only hold a, b",
            ),
            (
                json!({"confirm": true, "other": 1}),
                "`other` is not a field of this question",
            ),
        ];
        for (content, want) in cases {
            assert_eq!(
                check(&schema(), &obj(content.clone())),
                Err(want.to_string()),
                "{content}"
            );
        }
    }
}
