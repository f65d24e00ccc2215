//! Tool schemas adapted to what each provider accepts.
//!
//! MCP servers publish full JSON Schema. OpenAI and Anthropic take it as is
//! (they only need an object at the top). Gemini's `parameters` accept an
//! OpenAPI subset and answer HTTP 400 to anything else (`additionalProperties`,
//! `$schema`, `$ref`, `const`, `oneOf`, …), so for Gemini we inline `$ref`s,
//! translate what has an equivalent (`const` → one-value `enum`, `oneOf` →
//! `anyOf`, `["string","null"]` → `nullable`, exclusive bounds → inclusive)
//! and drop the rest.

use serde_json::{Map, Value, json};

/// Ensures an object schema at the top (all providers need one).
pub(crate) fn object_schema(schema: &Value) -> Value {
    match schema {
        Value::Object(m) if m.get("type").and_then(Value::as_str) == Some("object") => {
            let mut m = m.clone();
            m.entry("properties").or_insert_with(|| json!({}));
            Value::Object(m)
        }
        Value::Object(m) if !m.contains_key("type") => {
            let mut m = m.clone();
            m.insert("type".into(), json!("object"));
            m.entry("properties").or_insert_with(|| json!({}));
            Value::Object(m)
        }
        _ => json!({"type": "object", "properties": {}}),
    }
}

/// Keys Gemini accepts in a schema.
const GEMINI_KEYS: &[&str] = &[
    "type",
    "format",
    "title",
    "description",
    "nullable",
    "enum",
    "maxItems",
    "minItems",
    "properties",
    "required",
    "minProperties",
    "maxProperties",
    "minLength",
    "maxLength",
    "pattern",
    "example",
    "anyOf",
    "propertyOrdering",
    "default",
    "items",
    "minimum",
    "maximum",
];

/// Rewrites `schema` into Gemini's subset.
pub(crate) fn for_gemini(schema: &Value) -> Value {
    let top = object_schema(schema);
    let defs = top
        .get("$defs")
        .or_else(|| top.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    clean(&top, &defs, 0)
}

fn clean(v: &Value, defs: &Value, depth: usize) -> Value {
    let Value::Object(m) = v else {
        return v.clone();
    };
    if depth > 16 {
        return json!({"type": "object"});
    }
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        let name = r.rsplit('/').next().unwrap_or("");
        if let Some(target) = defs.get(name) {
            let mut merged = target.clone();
            if let (Value::Object(t), Some(d)) = (&mut merged, m.get("description")) {
                t.insert("description".into(), d.clone());
            }
            return clean(&merged, defs, depth + 1);
        }
        return json!({"type": "object"});
    }
    let mut out = Map::new();
    for (k, val) in m {
        match k.as_str() {
            "properties" => {
                if let Value::Object(props) = val {
                    let cleaned: Map<String, Value> = props
                        .iter()
                        .map(|(pk, pv)| (pk.clone(), clean(pv, defs, depth + 1)))
                        .collect();
                    out.insert(k.clone(), Value::Object(cleaned));
                }
            }
            "items" => {
                out.insert(k.clone(), clean(val, defs, depth + 1));
            }
            "anyOf" | "oneOf" => {
                if let Value::Array(list) = val {
                    let cleaned: Vec<Value> =
                        list.iter().map(|s| clean(s, defs, depth + 1)).collect();
                    out.insert("anyOf".into(), Value::Array(cleaned));
                }
            }
            "const" => {
                out.insert("enum".into(), json!([val]));
            }
            "exclusiveMinimum" if val.is_number() => {
                out.entry("minimum").or_insert(val.clone());
            }
            "exclusiveMaximum" if val.is_number() => {
                out.entry("maximum").or_insert(val.clone());
            }
            "type" => match val {
                Value::Array(types) => {
                    let non_null: Vec<&Value> = types
                        .iter()
                        .filter(|t| t.as_str() != Some("null"))
                        .collect();
                    if non_null.len() < types.len() {
                        out.insert("nullable".into(), json!(true));
                    }
                    out.insert(
                        "type".into(),
                        non_null
                            .first()
                            .map(|t| (*t).clone())
                            .unwrap_or(json!("string")),
                    );
                }
                other => {
                    out.insert("type".into(), other.clone());
                }
            },
            "enum" => {
                // Gemini enums are strings.
                if let Value::Array(vals) = val {
                    let strings: Vec<Value> = vals
                        .iter()
                        .map(|x| match x {
                            Value::String(_) => x.clone(),
                            other => Value::String(other.to_string()),
                        })
                        .collect();
                    out.insert("enum".into(), Value::Array(strings));
                    out.insert("type".into(), json!("string"));
                }
            }
            key if GEMINI_KEYS.contains(&key) => {
                out.insert(k.clone(), val.clone());
            }
            _ => {}
        }
    }
    Value::Object(out)
}

/// Keys Gemini rejects, for the fake server's validation and our tests.
pub fn gemini_rejected_key(schema: &Value) -> Option<String> {
    match schema {
        Value::Object(m) => {
            for (k, v) in m {
                if k == "properties" {
                    if let Value::Object(props) = v {
                        for pv in props.values() {
                            if let Some(bad) = gemini_rejected_key(pv) {
                                return Some(bad);
                            }
                        }
                    }
                    continue;
                }
                if !GEMINI_KEYS.contains(&k.as_str()) {
                    return Some(k.clone());
                }
                if k == "items" || k == "anyOf" {
                    let children: Vec<&Value> = match v {
                        Value::Array(a) => a.iter().collect(),
                        other => vec![other],
                    };
                    for c in children {
                        if let Some(bad) = gemini_rejected_key(c) {
                            return Some(bad);
                        }
                    }
                }
            }
            None
        }
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_typical_mcp_schema_becomes_gemini_clean() {
        let s = json!({
            "$schema": "http://json-schema.org/draft-07/schema#",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "name": {"type": "string", "description": "n"},
                "value": {"type": "integer", "exclusiveMinimum": 0},
                "mode": {"const": "fast"},
                "tags": {"type": "array", "items": {"$ref": "#/$defs/Tag"}},
                "maybe": {"type": ["string", "null"]},
                "either": {"oneOf": [{"type": "string"}, {"type": "integer"}]}
            },
            "required": ["name"],
            "$defs": {"Tag": {"type": "object", "additionalProperties": false, "properties": {"k": {"type": "string"}}}}
        });
        let g = for_gemini(&s);
        assert_eq!(gemini_rejected_key(&g), None, "{g:#}");
        assert_eq!(g["properties"]["value"]["minimum"], 0);
        assert_eq!(g["properties"]["mode"]["enum"], json!(["fast"]));
        assert_eq!(
            g["properties"]["tags"]["items"]["properties"]["k"]["type"],
            "string"
        );
        assert_eq!(g["properties"]["maybe"]["nullable"], true);
        assert_eq!(g["properties"]["either"]["anyOf"][1]["type"], "integer");
        assert_eq!(g["required"], json!(["name"]));
        assert!(
            gemini_rejected_key(&s).is_some(),
            "the raw MCP schema would be rejected"
        );
    }

    #[test]
    fn object_schema_fills_in_what_providers_require() {
        assert_eq!(
            object_schema(&json!(null)),
            json!({"type": "object", "properties": {}})
        );
        assert_eq!(
            object_schema(&json!({"properties": {"a": {}}}))["type"],
            "object"
        );
        assert_eq!(
            object_schema(&json!({"type": "object"}))["properties"],
            json!({})
        );
    }
}
