//! The change a file tool will make, as a diff on the approval card:
//! `patch_file`'s unified diff as sent, or `edit_file`'s edits as
//! removed/added lines. Lines are marked by sign and class (never colour
//! alone), so the operator reads exactly what will change before deciding.

use leptos::prelude::*;
use serde_json::Value;

/// The diff text of a call, when its tool changes a file by a diff or by
/// edits: `patch_file` → its `patch`; `edit_file` → one `@@ edit N @@`
/// section per edit. Tool names may carry a server prefix.
pub fn change_of(tool: &str, args: &Value) -> Option<String> {
    if tool.ends_with("patch_file") {
        return args
            .get("patch")
            .and_then(Value::as_str)
            .map(str::to_string);
    }
    if tool.ends_with("edit_file") {
        let edits = args.get("edits")?.as_array()?;
        let mut out = String::new();
        for (i, e) in edits.iter().enumerate() {
            let field = |a: &str, b: &str| e.get(a).or_else(|| e.get(b)).and_then(Value::as_str);
            out.push_str(&format!("@@ edit {} @@\n", i + 1));
            for l in field("old_text", "oldText").unwrap_or("").lines() {
                out.push_str(&format!("-{l}\n"));
            }
            for l in field("new_text", "newText").unwrap_or("").lines() {
                out.push_str(&format!("+{l}\n"));
            }
        }
        return Some(out);
    }
    None
}

/// The class of a diff line.
fn class_of(line: &str) -> &'static str {
    if line.starts_with("+++") || line.starts_with("---") {
        "diff-file"
    } else if line.starts_with("@@") {
        "diff-hunk"
    } else if line.starts_with('+') {
        "diff-add"
    } else if line.starts_with('-') {
        "diff-del"
    } else {
        "diff-ctx"
    }
}

/// A diff, one line per row.
#[component]
pub fn DiffView(diff: String) -> impl IntoView {
    let lines: Vec<(String, &'static str)> =
        diff.lines().map(|l| (l.to_string(), class_of(l))).collect();
    view! {
        <pre class="diff" aria-label="The change">
            {lines.into_iter().map(|(l, c)| view! { <span class=c>{l}</span> }).collect_view()}
        </pre>
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn patches_and_edits_become_diffs() {
        let p = change_of("patch_file", &json!({"patch": "@@ -1 +1 @@\n-a\n+b\n"})).unwrap();
        assert_eq!(p, "@@ -1 +1 @@\n-a\n+b\n");
        let e = change_of(
            "edit_file",
            &json!({"edits": [{"old_text": "x\ny", "new_text": "z"}, {"oldText": "p", "newText": "q"}]}),
        )
        .unwrap();
        assert_eq!(e, "@@ edit 1 @@\n-x\n-y\n+z\n@@ edit 2 @@\n-p\n+q\n");
        assert!(change_of("write_file", &json!({"content": "x"})).is_none());
        assert_eq!(class_of("+++ b/x"), "diff-file");
        assert_eq!(class_of("+x"), "diff-add");
        assert_eq!(class_of("-x"), "diff-del");
        assert_eq!(class_of(" x"), "diff-ctx");
    }
}
