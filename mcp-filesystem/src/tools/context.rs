//! What every tool handler works with: the roots ([`Fs`]), its arguments
//! ([`Args`]), and failures in words. A file of its own so that the
//! handlers import it by path while `mod.rs` (the table of tools, which
//! names every handler) stays the only file that knows them all.

use crate::config::{Checked, RootSpec};
use crate::path::{PathError, RelPath};
use crate::sandbox::{Root, SandboxError};
use serde_json::{Map, Value};

/// A tool's failure, as the caller reads it.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolError(pub String);

/// What a handler returns: the result object, or why not.
pub type Outcome = Result<Value, ToolError>;

/// File bytes as a JSON string: moved, not copied, when they are UTF-8
/// (the usual case, and a full read is the biggest thing a call holds);
/// otherwise with U+FFFD for each bad sequence.
pub fn text_value(buf: Vec<u8>) -> Value {
    match String::from_utf8(buf) {
        Ok(s) => Value::String(s),
        Err(e) => Value::String(String::from_utf8_lossy(e.as_bytes()).into_owned()),
    }
}

/// The roots, opened, and the limits.
pub struct Fs {
    roots: Vec<(RootSpec, Root)>,
    pub max_full_read_size: u64,
    pub max_patch_size: u64,
}

impl Fs {
    /// Opens every root of a checked config.
    pub fn open(c: &Checked) -> std::io::Result<Fs> {
        let mut roots = Vec::new();
        for r in &c.roots {
            roots.push((r.clone(), Root::open(&r.name, &r.dir)?));
        }
        Ok(Fs {
            roots,
            max_full_read_size: c.max_full_read_size,
            max_patch_size: c.max_patch_size,
        })
    }

    pub fn specs(&self) -> impl Iterator<Item = &RootSpec> {
        self.roots.iter().map(|(s, _)| s)
    }

    /// Whether some root allows `tool` (`tools/list` shows only those).
    pub fn offers(&self, tool: &str) -> bool {
        tool == "list_roots" || self.roots.iter().any(|(s, _)| s.allows(tool))
    }

    /// The root named by argument `key`, if `tool` may run on it (§3.3:
    /// the root exists, then the tool is allowed there).
    pub fn root(&self, tool: &str, args: &Args<'_>, key: &str) -> Result<&Root, ToolError> {
        let name = args.req_str(key)?;
        let Some((spec, root)) = self.roots.iter().find(|(s, _)| s.name == name) else {
            let names: Vec<&str> = self.roots.iter().map(|(s, _)| s.name.as_str()).collect();
            return Err(ToolError(format!(
                "unknown root: {name} (roots: {}); call list_roots",
                names.join(", ")
            )));
        };
        if !spec.allows(tool) {
            return Err(ToolError(format!(
                "tool {tool} is not allowed on root {name} (allowed: {})",
                if spec.tools.is_empty() {
                    "none".to_string()
                } else {
                    spec.tools.join(", ")
                }
            )));
        }
        Ok(root)
    }
}

/// A path refused before touching the disk, in words.
pub fn path_error(given: &str, root: &Root, e: PathError) -> ToolError {
    let shown = shown(given);
    match e {
        PathError::Escapes => ToolError(format!("path {shown} escapes root {}", root.name)),
        e => ToolError(format!("path {shown} {e}")),
    }
}

/// A path that failed in the sandbox, in words.
pub fn sandbox_error(given: &str, root: &Root, e: SandboxError) -> ToolError {
    let shown = shown(given);
    ToolError(match e {
        SandboxError::Outside => format!(
            "path {shown} resolves outside root {} (links that leave the root are never followed)",
            root.name
        ),
        SandboxError::NotFound => format!("path {shown} does not exist in root {}", root.name),
        e => format!("path {shown} in root {} {e}", root.name),
    })
}

/// A caller's path as messages show it: quoted, and cut if huge.
fn shown(given: &str) -> String {
    let cut: String = given.chars().take(200).collect();
    let more = if cut.len() < given.len() { "…" } else { "" };
    format!("{:?}{more}", cut)
}

/// A tool's arguments, read leniently where the contract says so: integers
/// as JSON integers, integral floats or decimal strings; booleans as
/// `true`/`false` or their strings. Unknown arguments are ignored.
pub struct Args<'a> {
    pub tool: &'a str,
    map: &'a Map<String, Value>,
}

impl<'a> Args<'a> {
    pub fn new(tool: &'a str, map: &'a Map<String, Value>) -> Args<'a> {
        Args { tool, map }
    }

    fn bad(&self, name: &str, want: &str) -> ToolError {
        ToolError(format!("{}: argument {name} must be {want}", self.tool))
    }

    /// A string argument, or `None` when absent or null.
    pub fn str(&self, name: &str) -> Result<Option<&'a str>, ToolError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::String(s)) => Ok(Some(s.as_str())),
            Some(_) => Err(self.bad(name, "a string")),
        }
    }

    /// A required string argument.
    pub fn req_str(&self, name: &str) -> Result<&'a str, ToolError> {
        self.str(name)?
            .ok_or_else(|| ToolError(format!("{}: argument {name} is required", self.tool)))
    }

    /// A non-negative integer argument.
    pub fn uint(&self, name: &str) -> Result<Option<u64>, ToolError> {
        let want = "a non-negative integer";
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Number(n)) => {
                if let Some(u) = n.as_u64() {
                    Ok(Some(u))
                } else if let Some(f) = n.as_f64()
                    && f >= 0.0
                    && f.fract() == 0.0
                    && f <= 9.0e15
                {
                    Ok(Some(f as u64))
                } else {
                    Err(self.bad(name, want))
                }
            }
            Some(Value::String(s)) => s
                .trim()
                .parse::<u64>()
                .map(Some)
                .map_err(|_| self.bad(name, want)),
            Some(_) => Err(self.bad(name, want)),
        }
    }

    /// The argument as sent.
    pub fn raw(&self, name: &str) -> Option<&'a Value> {
        self.map.get(name).filter(|v| !v.is_null())
    }

    /// A list of strings (one string alone counts as a list of one).
    pub fn strings(&self, name: &str) -> Result<Option<Vec<&'a str>>, ToolError> {
        match self.raw(name) {
            None => Ok(None),
            Some(Value::String(s)) => Ok(Some(vec![s.as_str()])),
            Some(Value::Array(a)) => a
                .iter()
                .map(|v| {
                    v.as_str()
                        .ok_or_else(|| self.bad(name, "a list of strings"))
                })
                .collect::<Result<Vec<_>, _>>()
                .map(Some),
            Some(_) => Err(self.bad(name, "a list of strings")),
        }
    }

    /// A boolean argument.
    pub fn boolean(&self, name: &str) -> Result<Option<bool>, ToolError> {
        match self.map.get(name) {
            None | Some(Value::Null) => Ok(None),
            Some(Value::Bool(b)) => Ok(Some(*b)),
            Some(Value::String(s)) if s == "true" => Ok(Some(true)),
            Some(Value::String(s)) if s == "false" => Ok(Some(false)),
            Some(_) => Err(self.bad(name, "true or false")),
        }
    }
}

/// Reads argument `key` as a path in `root`.
pub fn rel_path(
    root: &Root,
    args: &Args<'_>,
    key: &str,
    default: Option<&str>,
) -> Result<(String, RelPath), ToolError> {
    let given = match (args.str(key)?, default) {
        (Some(p), _) => p,
        (None, Some(d)) => d,
        (None, None) => {
            return Err(ToolError(format!(
                "{}: argument {key} is required",
                args.tool
            )));
        }
    };
    let rel = RelPath::parse(given).map_err(|e| path_error(given, root, e))?;
    Ok((given.to_string(), rel))
}

/// The `type` of an entry, from its own (not followed) file type.
pub fn kind_of(ft: &cap_std::fs::FileType) -> &'static str {
    if ft.is_symlink() {
        "symlink"
    } else if ft.is_dir() {
        "directory"
    } else if ft.is_file() {
        "file"
    } else {
        "other"
    }
}

/// Resolves argument `path` (following a last link or not) to something
/// that exists, and its `lstat`.
pub fn lookup(
    root: &Root,
    args: &Args<'_>,
    follow_last: bool,
) -> Result<
    (
        String,
        RelPath,
        crate::sandbox::Resolved,
        cap_std::fs::Metadata,
    ),
    ToolError,
> {
    let (given, rel) = rel_path(root, args, "path", None)?;
    let r = root
        .resolve(&rel, follow_last)
        .map_err(|e| sandbox_error(&given, root, e))?;
    if !r.exists {
        return Err(sandbox_error(&given, root, SandboxError::NotFound));
    }
    let m = root
        .lstat(&r.path)
        .map_err(|e| sandbox_error(&given, root, e))?;
    Ok((given, rel, r, m))
}

/// RFC 3339 UTC with seconds, as the Go original printed times.
pub fn time(t: std::io::Result<cap_std::time::SystemTime>) -> Option<String> {
    let t = t.ok()?.into_std();
    Some(
        chrono::DateTime::<chrono::Utc>::from(t).to_rfc3339_opts(chrono::SecondsFormat::Secs, true),
    )
}
