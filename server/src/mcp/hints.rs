//! Tool hints at the top level of a tool, as the seed's servers send them.
//!
//! The MCP spec puts `destructiveHint` and `readOnlyHint` under
//! `tool.annotations`; older servers (the seed's Go ones) put them on the
//! tool itself. `rmcp` decodes tools into a typed struct that drops unknown
//! fields, so for stdio servers we rewrite each `tools/list` answer on the
//! wire before `rmcp` reads it: a top-level hint moves into `annotations`
//! unless `annotations` already says otherwise. Every other line passes
//! through untouched.

use serde_json::Value;

/// The hints we lift.
pub(crate) const HINTS: [&str; 4] = [
    "destructiveHint",
    "readOnlyHint",
    "idempotentHint",
    "openWorldHint",
];

/// Returns the line with top-level hints moved into `annotations`.
pub(crate) fn lift_top_level_hints(line: &str) -> std::borrow::Cow<'_, str> {
    if !line.contains("\"tools\"") || !HINTS.iter().any(|h| line.contains(h)) {
        return std::borrow::Cow::Borrowed(line);
    }
    let Ok(mut msg) = serde_json::from_str::<Value>(line) else {
        return std::borrow::Cow::Borrowed(line);
    };
    let Some(tools) = msg
        .pointer_mut("/result/tools")
        .and_then(Value::as_array_mut)
    else {
        return std::borrow::Cow::Borrowed(line);
    };
    let mut changed = false;
    for tool in tools.iter_mut().filter_map(Value::as_object_mut) {
        for hint in HINTS {
            let Some(v) = tool.remove(hint) else { continue };
            let annotations = tool
                .entry("annotations")
                .or_insert_with(|| Value::Object(Default::default()));
            if let Some(a) = annotations.as_object_mut() {
                a.entry(hint).or_insert(v);
                changed = true;
            }
        }
    }
    if changed {
        std::borrow::Cow::Owned(msg.to_string())
    } else {
        std::borrow::Cow::Borrowed(line)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn top_level_hints_move_into_annotations() {
        let line = json!({"jsonrpc": "2.0", "id": 2, "result": {"tools": [
            {"name": "a", "destructiveHint": false, "inputSchema": {}},
            {"name": "b", "readOnlyHint": true, "annotations": {"title": "B"}, "inputSchema": {}},
            {"name": "c", "destructiveHint": true, "annotations": {"destructiveHint": false}, "inputSchema": {}}
        ]}})
        .to_string();
        let out: Value = serde_json::from_str(&lift_top_level_hints(&line)).unwrap();
        let tools = &out["result"]["tools"];
        assert_eq!(tools[0]["annotations"]["destructiveHint"], false);
        assert!(tools[0].get("destructiveHint").is_none());
        assert_eq!(
            tools[1]["annotations"],
            json!({"title": "B", "readOnlyHint": true})
        );
        assert_eq!(
            tools[2]["annotations"]["destructiveHint"], false,
            "annotations win"
        );
    }

    #[test]
    fn other_lines_pass_through_untouched() {
        let line = r#"{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"x"}]}}"#;
        assert!(matches!(
            lift_top_level_hints(line),
            std::borrow::Cow::Borrowed(_)
        ));
        assert_eq!(
            lift_top_level_hints("not json tools destructiveHint"),
            "not json tools destructiveHint"
        );
    }
}
