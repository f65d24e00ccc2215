//! The fields of "Edit arguments" (POLICY.md §3), shared by the form in
//! the browser and the server that reads the same form posted without
//! JavaScript (REACH.md §1): one field per property of the tool's
//! `inputSchema` (or, for a sub-agent's tool whose schema is not listed
//! here, per argument, typed by its value), and how a field's text becomes
//! JSON. Both sides use these functions, so a field means the same thing
//! whether the WebAssembly read it or the server did.

use serde_json::{Map, Value};

/// The prefix of an argument's form field name (`arg.value`), so no
/// argument can collide with the form's own fields.
pub const PREFIX: &str = "arg.";

/// How a field is edited and read back.
#[derive(Clone, Debug, PartialEq)]
pub enum Kind {
    Integer,
    Number,
    Boolean,
    Choice(Vec<String>),
    Text,
    /// Objects, arrays and anything else: JSON text.
    Json,
}

/// One field of the form.
#[derive(Clone, Debug, PartialEq)]
pub struct Spec {
    pub name: String,
    pub kind: Kind,
    pub required: bool,
    pub description: Option<String>,
    /// The text the field starts with (a checkbox: "true"/"false").
    pub initial: String,
}

/// The fields of `schema` (an object schema) prefilled from `args`; with
/// no schema, the fields of `args` with their values' types.
pub fn specs(schema: Option<&Value>, args: &Value) -> Vec<Spec> {
    let props = schema
        .and_then(|s| s.get("properties"))
        .and_then(Value::as_object);
    let required: Vec<&str> = schema
        .and_then(|s| s.get("required"))
        .and_then(Value::as_array)
        .map(|r| r.iter().filter_map(Value::as_str).collect())
        .unwrap_or_default();
    let mut names: Vec<String> = props
        .map(|p| p.keys().cloned().collect())
        .unwrap_or_default();
    if let Some(a) = args.as_object() {
        for k in a.keys() {
            if !names.contains(k) {
                names.push(k.clone());
            }
        }
    }
    names
        .into_iter()
        .map(|name| {
            let prop = props.and_then(|p| p.get(&name));
            let current = args.get(&name);
            let kind = kind_of(prop, current);
            let initial = match (current, &kind) {
                (None | Some(Value::Null), Kind::Boolean) => "false".to_string(),
                (None | Some(Value::Null), _) => String::new(),
                (Some(Value::String(s)), Kind::Text | Kind::Choice(_)) => s.clone(),
                (Some(v), Kind::Json) => serde_json::to_string_pretty(v).unwrap_or_default(),
                (Some(v), _) => match v {
                    Value::String(s) => s.clone(),
                    other => other.to_string(),
                },
            };
            Spec {
                required: required.contains(&name.as_str()),
                description: prop
                    .and_then(|p| p.get("description"))
                    .and_then(Value::as_str)
                    .map(str::to_string),
                name,
                kind,
                initial,
            }
        })
        .collect()
}

fn kind_of(prop: Option<&Value>, current: Option<&Value>) -> Kind {
    if let Some(choices) = prop.and_then(|p| p.get("enum")).and_then(Value::as_array)
        && choices.iter().all(Value::is_string)
    {
        return Kind::Choice(
            choices
                .iter()
                .filter_map(Value::as_str)
                .map(str::to_string)
                .collect(),
        );
    }
    let declared = prop.and_then(|p| p.get("type")).and_then(|t| match t {
        Value::String(s) => Some(s.as_str()),
        // ["integer", "null"]: the first non-null type.
        Value::Array(a) => a.iter().filter_map(Value::as_str).find(|s| *s != "null"),
        _ => None,
    });
    match declared {
        Some("integer") => Kind::Integer,
        Some("number") => Kind::Number,
        Some("boolean") => Kind::Boolean,
        Some("string") => Kind::Text,
        Some(_) => Kind::Json,
        None => match current {
            Some(Value::Number(n)) if n.is_i64() || n.is_u64() => Kind::Integer,
            Some(Value::Number(_)) => Kind::Number,
            Some(Value::Bool(_)) => Kind::Boolean,
            Some(Value::String(_)) => Kind::Text,
            _ => Kind::Json,
        },
    }
}

/// The field's value as JSON, `Ok(None)` for an empty optional field, or
/// what is wrong with it. A checkbox's text is "true" when checked.
pub fn read(spec: &Spec, text: &str) -> Result<Option<Value>, String> {
    let t = text.trim();
    if t.is_empty() && !matches!(spec.kind, Kind::Boolean | Kind::Text) {
        return if spec.required {
            Err("is required".into())
        } else {
            Ok(None)
        };
    }
    match &spec.kind {
        Kind::Integer => t
            .parse::<i64>()
            .map(|n| Some(Value::from(n)))
            .map_err(|_| "must be a whole number".into()),
        Kind::Number => t
            .parse::<f64>()
            .ok()
            .and_then(serde_json::Number::from_f64)
            .map(|n| Some(Value::Number(n)))
            .ok_or_else(|| "must be a number".into()),
        Kind::Boolean => Ok(Some(Value::Bool(t == "true"))),
        Kind::Choice(options) if options.iter().any(|o| o == t) => {
            Ok(Some(Value::String(t.to_string())))
        }
        Kind::Choice(options) => Err(format!("must be one of {}", options.join(", "))),
        Kind::Text if text.is_empty() && !spec.required => Ok(None),
        Kind::Text => Ok(Some(Value::String(text.to_string()))),
        Kind::Json => serde_json::from_str(t)
            .map(Some)
            .map_err(|e| format!("is not valid JSON: {e}")),
    }
}

/// The arguments a posted form gives: `field(name)` is the text posted for
/// `arg.<name>` (absent for an unchecked checkbox). Every problem is said,
/// `name: why`, joined by "; ".
pub fn from_form<'a>(
    specs: &[Spec],
    field: impl Fn(&str) -> Option<&'a str>,
) -> Result<Value, String> {
    let mut args = Map::new();
    let mut problems = Vec::new();
    for s in specs {
        let posted = field(&format!("{PREFIX}{}", s.name));
        let text = match (&s.kind, posted) {
            (Kind::Boolean, Some(_)) => "true",
            (Kind::Boolean, None) => "false",
            (_, Some(t)) => t,
            (_, None) => "",
        };
        match read(s, text) {
            Ok(Some(v)) => {
                args.insert(s.name.clone(), v);
            }
            Ok(None) => {}
            Err(e) => problems.push(format!("{}: {e}", s.name)),
        }
    }
    if problems.is_empty() {
        Ok(Value::Object(args))
    } else {
        Err(problems.join("; "))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn schema() -> Value {
        json!({"type": "object", "required": ["name", "value"], "properties": {
            "name": {"type": "string", "description": "the resource"},
            "value": {"type": "integer"},
            "ratio": {"type": ["number", "null"]},
            "force": {"type": "boolean"},
            "mode": {"enum": ["fast", "safe"]},
            "tags": {"type": "array"}
        }})
    }

    #[test]
    fn a_posted_form_reads_as_the_browser_reads_it() {
        let s = specs(
            Some(&schema()),
            &json!({"name": "apples", "value": 5, "extra": true}),
        );
        // The schema's order, then the arguments' own (a JSON map's order
        // depends on serde_json's features): compare as a set.
        let mut names: Vec<&str> = s.iter().map(|f| f.name.as_str()).collect();
        names.sort();
        assert_eq!(
            names,
            ["extra", "force", "mode", "name", "ratio", "tags", "value"]
        );
        assert_eq!(s.last().map(|f| f.name.as_str()), Some("extra"));
        let spec = |n: &str| s.iter().find(|f| f.name == n).unwrap();
        assert_eq!(spec("value").initial, "5");
        assert_eq!(spec("force").initial, "false");
        assert!(spec("name").required && !spec("ratio").required);
        let posted = [
            ("arg.name", "pears"),
            ("arg.value", "7"),
            ("arg.ratio", ""),
            ("arg.mode", "safe"),
            ("arg.tags", "[\"a\"]"),
            ("arg.extra", "true"),
        ];
        let get = |k: &str| posted.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        assert_eq!(
            from_form(&s, get).unwrap(),
            json!({"name": "pears", "value": 7, "force": false, "mode": "safe", "tags": ["a"], "extra": true})
        );
        let bad = [
            ("arg.name", "pears"),
            ("arg.value", "seven"),
            ("arg.mode", "reckless"),
        ];
        let get = |k: &str| bad.iter().find(|(n, _)| *n == k).map(|(_, v)| *v);
        let e = from_form(&s, get).unwrap_err();
        assert!(e.contains("value: must be a whole number"), "{e}");
        assert!(e.contains("mode: must be one of fast, safe"), "{e}");
    }
}
