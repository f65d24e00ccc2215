//! Reading a provider's answer into its typed wire structs.
//!
//! Each provider module declares its answer as serde structs (what the
//! provider documents as required is required, what it documents as
//! optional is an `Option`, unknown extra fields are ignored). This file
//! is the one way they are read, so that a renamed or missing field is an
//! error naming the field by its path in the answer (`content[1].id`),
//! never an empty string or a silently skipped call.
//!
//! The error text reaches the conversation and the API's answer (through
//! [`super::LlmError::Decode`]), so it is written here, from the path and
//! the kind of mistake only: serde's own text may name our Rust types
//! (`expected struct Completion`) or quote the provider's values.

use serde::Deserialize;
use serde_json::Value;

/// Reads `answer` as `T`; the error says which field is wrong and how.
pub(crate) fn read<'de, T: Deserialize<'de>>(answer: &'de Value) -> Result<T, String> {
    serde_path_to_error::deserialize(answer).map_err(|e| describe(&e.path().to_string(), e.inner()))
}

/// The client-safe text of a decode error at `path` (`.` for the root).
fn describe(path: &str, inner: &serde_json::Error) -> String {
    let text = inner.to_string();
    let at = |field: &str| match path {
        "." | "" => field.to_string(),
        p => format!("{p}.{field}"),
    };
    if let Some(field) = text
        .strip_prefix("missing field `")
        .and_then(|rest| rest.split('`').next())
    {
        return format!("the required field `{}` is missing", at(field));
    }
    let place = if matches!(path, "." | "") {
        "the answer".to_string()
    } else {
        format!("`{path}`")
    };
    if let Some((_, expected)) = text
        .strip_prefix("invalid type: ")
        .and_then(|rest| rest.rsplit_once(", expected "))
    {
        // Serde's names of our own types say nothing to a reader.
        let expected = if expected.contains("struct ") || expected.contains("enum ") {
            "an object"
        } else {
            expected
        };
        return format!("{place} is not {expected}");
    }
    format!("{place} cannot be read")
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Outer {
        items: Vec<Inner>,
    }

    #[derive(Debug, Deserialize)]
    #[allow(dead_code)]
    struct Inner {
        id: String,
        count: Option<u64>,
    }

    #[test]
    fn a_missing_field_is_named_by_its_path() {
        let e = read::<Outer>(&json!({"items": [{"id": "a"}, {"key": "b"}]})).unwrap_err();
        assert_eq!(e, "the required field `items[1].id` is missing");
        let e = read::<Outer>(&json!({"things": []})).unwrap_err();
        assert_eq!(e, "the required field `items` is missing");
    }

    #[test]
    fn a_wrong_type_names_the_field_and_never_our_types_or_their_values() {
        let e = read::<Outer>(&json!({"items": [{"id": "a", "count": "secret-ish"}]})).unwrap_err();
        assert_eq!(e, "`items[0].count` is not u64");
        let e = read::<Outer>(&json!({"items": ["x"]})).unwrap_err();
        assert_eq!(e, "`items[0]` is not an object");
        assert!(!e.contains("Inner"));
        let e = read::<Outer>(&json!([1])).unwrap_err();
        assert!(!e.contains("Outer"), "{e}");
    }
}
