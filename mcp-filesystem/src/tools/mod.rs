//! The tools (MCP-FILESYSTEM.md §3, §5): one table of every tool with its
//! title, description, input schema, annotations and handler, read by the
//! MCP server for `tools/list` and `tools/call`.
//!
//! Handlers are plain synchronous functions over [`Fs`] and [`Args`]; the
//! server runs them on the blocking pool, catches panics, and turns an
//! `Err` into an `isError` result. Every failure message names the tool,
//! the root and the path as the caller gave it, and never a host path.

mod context;
mod copy;
mod extras;
mod info;
mod list;
mod read;
mod search;
mod walk;
mod write;

pub use context::{
    Args, Fs, Outcome, ToolError, kind_of, lookup, path_error, rel_path, sandbox_error, text_value,
    time,
};
use serde_json::{Map, Value, json};

/// What a tool does to the roots, for its annotations (§3.2).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    ReadOnly,
    /// Changes or removes something: the agent asks approval first.
    Destructive,
    /// Only adds an empty folder (`create_folder`).
    Additive,
}

/// One tool.
pub struct Spec {
    pub name: &'static str,
    pub title: &'static str,
    pub description: &'static str,
    pub kind: Kind,
    /// `(name, JSON type, description, required)` per argument.
    pub args: &'static [(&'static str, &'static str, &'static str, bool)],
    pub run: fn(&Fs, &Args<'_>) -> Outcome,
}

impl Spec {
    /// The JSON Schema of the arguments.
    pub fn input_schema(&self) -> Map<String, Value> {
        let mut props = Map::new();
        let mut required = Vec::new();
        for (name, ty, desc, req) in self.args {
            let schema = match *ty {
                "integer" => json!({"type": "integer", "minimum": 0, "description": desc}),
                "strings" => {
                    json!({"type": "array", "items": {"type": "string"}, "description": desc})
                }
                "edits" => json!({"type": "array", "description": desc, "items": {
                    "type": "object",
                    "properties": {"old_text": {"type": "string"}, "new_text": {"type": "string"}},
                    "required": ["old_text", "new_text"],
                }}),
                t => json!({"type": t, "description": desc}),
            };
            props.insert(name.to_string(), schema);
            if *req {
                required.push(json!(name));
            }
        }
        let mut m = Map::new();
        m.insert("type".into(), json!("object"));
        m.insert("properties".into(), Value::Object(props));
        m.insert("required".into(), Value::Array(required));
        m
    }
}

const ROOT: (&str, &str, &str, bool) =
    ("root", "string", "The root's name, from list_roots.", true);

/// The arguments of `copy` and `move`.
const TWO_ENDS: &[(&str, &str, &str, bool)] = &[
    (
        "source_root",
        "string",
        "The source's root, from list_roots.",
        true,
    ),
    (
        "source_path",
        "string",
        "Path relative to source_root.",
        true,
    ),
    (
        "dest_root",
        "string",
        "The destination's root, from list_roots.",
        true,
    ),
    ("dest_path", "string", "Path relative to dest_root.", true),
];

/// Every tool, `list_roots` first.
pub static SPECS: &[Spec] = &[
    Spec {
        name: "list_roots",
        title: "List roots",
        description: "List the roots (named folders) this server gives access to, with the tools each allows. Call this first: every other tool takes a `root` from here and paths relative to it.",
        kind: Kind::ReadOnly,
        args: &[],
        run: list::list_roots,
    },
    Spec {
        name: "list_folder",
        title: "List folder",
        description: "List a folder's entries (name, type, size, modified time; symlinks with what they point to), sorted by name, at most 10,000. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            (
                "path",
                "string",
                "Folder path relative to the root (default: the root).",
                false,
            ),
        ],
        run: list::list_folder,
    },
    Spec {
        name: "read_file",
        title: "Read file",
        description: "Read a file: whole (up to max_full_read_size), a byte range (offset_bytes/limit_bytes) or a line range (offset_lines from 1, limit_lines). Binary files come back base64. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            ("path", "string", "File path relative to the root.", true),
            ("offset_bytes", "integer", "Start at this byte.", false),
            ("limit_bytes", "integer", "At most this many bytes.", false),
            (
                "offset_lines",
                "integer",
                "Start at this line (1-based).",
                false,
            ),
            ("limit_lines", "integer", "At most this many lines.", false),
        ],
        run: read::read_file,
    },
    Spec {
        name: "stat_file",
        title: "File information",
        description: "Type, size and times of a file, folder or symlink (a symlink is described itself, with what it points to). `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[ROOT, ("path", "string", "Path relative to the root.", true)],
        run: info::stat_file,
    },
    Spec {
        name: "hash_file",
        title: "Hash file",
        description: "Hash a file's content: md5, sha1, sha256 (default) or sha512, as lowercase hex. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            ("path", "string", "File path relative to the root.", true),
            (
                "algorithm",
                "string",
                "md5, sha1, sha256 (default) or sha512.",
                false,
            ),
        ],
        run: info::hash_file,
    },
    Spec {
        name: "permissions_file",
        title: "File permissions",
        description: "Mode (octal and ls -l style), owner and group of a file or folder. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[ROOT, ("path", "string", "Path relative to the root.", true)],
        run: info::permissions_file,
    },
    Spec {
        name: "write_file",
        title: "Write file",
        description: "Write a file (content may be empty): overwrite (default, atomic, permissions kept), append, or create_only (fails if anything exists there). Missing folders are created. `root` comes from list_roots.",
        kind: Kind::Destructive,
        args: &[
            ROOT,
            ("path", "string", "File path relative to the root.", true),
            ("content", "string", "The text to write.", true),
            (
                "mode",
                "string",
                "overwrite (default), append or create_only.",
                false,
            ),
        ],
        run: write::write_file,
    },
    Spec {
        name: "remove_file",
        title: "Remove file",
        description: "Remove a file, or a symlink itself (never what it points to). Folders: use remove_folder. `root` comes from list_roots.",
        kind: Kind::Destructive,
        args: &[
            ROOT,
            ("path", "string", "File path relative to the root.", true),
        ],
        run: write::remove_file,
    },
    Spec {
        name: "patch_file",
        title: "Patch file",
        description: "Apply a unified diff (diff -u or git diff output, one file) to a file: all hunks or none, atomically; a missing file is created. dry_run checks without writing. `root` comes from list_roots.",
        kind: Kind::Destructive,
        args: &[
            ROOT,
            (
                "path",
                "string",
                "File path relative to the root (the names inside the patch are ignored).",
                true,
            ),
            ("patch", "string", "The unified diff.", true),
            (
                "dry_run",
                "boolean",
                "Only check that it applies (default false).",
                false,
            ),
        ],
        run: write::patch_file,
    },
    Spec {
        name: "create_folder",
        title: "Create folder",
        description: "Create a folder and any missing parents; succeeds with created: false if it already exists. `root` comes from list_roots.",
        kind: Kind::Additive,
        args: &[
            ROOT,
            ("path", "string", "Folder path relative to the root.", true),
        ],
        run: write::create_folder,
    },
    Spec {
        name: "remove_folder",
        title: "Remove folder",
        description: "Remove a folder and everything in it (symlinks inside are unlinked, never followed). Never the root. `root` comes from list_roots.",
        kind: Kind::Destructive,
        args: &[
            ROOT,
            ("path", "string", "Folder path relative to the root.", true),
        ],
        run: write::remove_folder,
    },
    Spec {
        name: "copy",
        title: "Copy",
        description: "Copy a file (replacing a file at the destination atomically) or a folder (to a new path; symlinks and special files are skipped and listed), within a root or between roots from list_roots.",
        kind: Kind::Destructive,
        args: TWO_ENDS,
        run: copy::copy,
    },
    Spec {
        name: "move",
        title: "Move",
        description: "Move or rename a file, folder or symlink (a symlink only within its root), within a root or between roots from list_roots. A file at the destination is replaced; a folder there is an error.",
        kind: Kind::Destructive,
        args: TWO_ENDS,
        run: copy::move_,
    },
    Spec {
        name: "grep",
        title: "Search file contents",
        description: "Search files under a folder for a regular expression (Rust regex syntax), line by line: matches with root-relative file paths, line numbers and optional context, in path order. Binary files and symlinks are skipped. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            ("pattern", "string", "The regular expression.", true),
            (
                "path",
                "string",
                "Folder (or file) relative to the root (default: the root).",
                false,
            ),
            (
                "glob_filter",
                "string",
                "Only files whose name (or path under `path`, if it has a /) matches this glob.",
                false,
            ),
            (
                "case_insensitive",
                "boolean",
                "Ignore case (default false).",
                false,
            ),
            (
                "context_lines",
                "integer",
                "Lines of context before and after each match (default 0, at most 50).",
                false,
            ),
            (
                "max_results",
                "integer",
                "At most this many matches (default 100, at most 10000).",
                false,
            ),
            (
                "timeout_seconds",
                "integer",
                "Stop after this long with partial results (default 25, at most 300).",
                false,
            ),
            (
                "max_depth",
                "integer",
                "How deep to go: 0 = only files directly in `path` (default: no limit).",
                false,
            ),
        ],
        run: search::grep,
    },
    Spec {
        name: "glob",
        title: "Find files",
        description: "Find files, folders and symlinks under a folder by glob (`*`, `?`, `[..]`, `**`; a pattern without / matches names at any depth) or by regex on the path; root-relative paths in path order. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            ("pattern", "string", "A glob (give this or regex).", false),
            (
                "regex",
                "string",
                "A regular expression on the path under `path` (give this or pattern).",
                false,
            ),
            (
                "path",
                "string",
                "Folder relative to the root (default: the root).",
                false,
            ),
            (
                "max_results",
                "integer",
                "At most this many (default 100, at most 10000).",
                false,
            ),
            (
                "timeout_seconds",
                "integer",
                "Stop after this long with partial results (default 25, at most 300).",
                false,
            ),
            (
                "max_depth",
                "integer",
                "How deep to go: 0 = only entries directly in `path`.",
                false,
            ),
            (
                "type_filter",
                "string",
                "file, directory, symlink or all (default).",
                false,
            ),
        ],
        run: search::glob_tool,
    },
    Spec {
        name: "read_multiple_files",
        title: "Read several files",
        description: "Read several whole files at once (at most 100); each answer has the file's content or its own error. The call returns at most max_full_read_size bytes of content in all. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            ("paths", "strings", "File paths relative to the root.", true),
        ],
        run: extras::read_multiple_files,
    },
    Spec {
        name: "directory_tree",
        title: "Folder tree",
        description: "The folders and files under a folder as a nested tree (symlinks shown, never entered), max_depth levels (default 3), leaving out exclude_patterns. `root` comes from list_roots.",
        kind: Kind::ReadOnly,
        args: &[
            ROOT,
            (
                "path",
                "string",
                "Folder relative to the root (default: the root).",
                false,
            ),
            ("max_depth", "integer", "Levels to show (default 3).", false),
            (
                "exclude_patterns",
                "strings",
                "Globs of names (or paths, with a /) to leave out, e.g. .git or node_modules.",
                false,
            ),
        ],
        run: extras::directory_tree,
    },
    Spec {
        name: "edit_file",
        title: "Edit file",
        description: "Edit a text file by exact search and replace: each edit's old_text must occur exactly once; all edits apply or none, atomically. The answer shows the unified diff; dry_run only shows it. `root` comes from list_roots.",
        kind: Kind::Destructive,
        args: &[
            ROOT,
            ("path", "string", "File path relative to the root.", true),
            (
                "edits",
                "edits",
                "The edits, in order: [{old_text, new_text}].",
                true,
            ),
            (
                "dry_run",
                "boolean",
                "Only show the diff (default false).",
                false,
            ),
        ],
        run: extras::edit_file,
    },
];

/// The tool named `name`.
pub fn spec(name: &str) -> Option<&'static Spec> {
    SPECS.iter().find(|s| s.name == name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integers_and_booleans_arrive_in_several_spellings() {
        let m: Map<String, Value> = serde_json::from_value(json!({
            "a": 2, "b": 2.0, "c": "2", "d": -1, "e": 2.5, "f": "x", "t": "true", "u": false, "s": 3
        }))
        .unwrap();
        let a = Args::new("read_file", &m);
        assert_eq!(a.uint("a").unwrap(), Some(2));
        assert_eq!(a.uint("b").unwrap(), Some(2));
        assert_eq!(a.uint("c").unwrap(), Some(2));
        assert_eq!(a.uint("zz").unwrap(), None);
        for bad in ["d", "e", "f"] {
            let e = a.uint(bad).unwrap_err();
            assert!(e.0.contains(bad) && e.0.contains("read_file"), "{e:?}");
        }
        assert_eq!(a.boolean("t").unwrap(), Some(true));
        assert_eq!(a.boolean("u").unwrap(), Some(false));
        assert!(a.boolean("a").is_err());
        assert!(a.str("s").is_err());
        assert!(a.req_str("missing").unwrap_err().0.contains("required"));
    }

    #[test]
    fn every_tool_has_a_schema_with_root_first() {
        for s in SPECS {
            let schema = s.input_schema();
            assert_eq!(schema["type"], "object");
            let required = schema["required"].as_array().unwrap();
            if s.name != "list_roots" {
                assert!(
                    required.contains(&json!("root")) || required.contains(&json!("source_root")),
                    "{}",
                    s.name
                );
            }
        }
    }
}
