//! `config/mcp-filesystem.yaml` (MCP-FILESYSTEM.md §2) and its checks.
//!
//! Unknown keys and wrong types are errors naming the key path (the Go
//! original ignored typos such as `allowed_tool`). Roots must exist, be
//! directories, have unique well-formed names and known tool names, and
//! must not overlap: an overlap would make a read-only root writable
//! through another one, or let `remove_folder` on one root delete another.
//! Each root's directory is resolved once here (symlinks followed) and is
//! never looked up by host path again.

use serde::Deserialize;
use std::fmt;
use std::path::{Path, PathBuf};

/// The tools a root may allow (`list_roots` is always available): the
/// Go original's 14 and the three additions of §9 (`directory_tree`,
/// `edit_file`, `read_multiple_files`).
pub const ROOT_TOOLS: [&str; 17] = [
    "copy",
    "create_folder",
    "directory_tree",
    "edit_file",
    "glob",
    "grep",
    "hash_file",
    "list_folder",
    "move",
    "patch_file",
    "permissions_file",
    "read_file",
    "read_multiple_files",
    "remove_file",
    "remove_folder",
    "stat_file",
    "write_file",
];

/// The tools that change something (a root without any is read-only).
pub const MUTATING_TOOLS: [&str; 8] = [
    "copy",
    "create_folder",
    "edit_file",
    "move",
    "patch_file",
    "remove_file",
    "remove_folder",
    "write_file",
];

fn default_host() -> String {
    "127.0.0.1".into()
}
fn default_port() -> u16 {
    8091
}
fn default_full_read() -> u64 {
    1024 * 1024
}
fn default_patch() -> u64 {
    10 * 1024 * 1024
}

/// The file as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FsConfig {
    #[serde(default = "default_host")]
    pub host: String,
    #[serde(default = "default_port")]
    pub port: u16,
    #[serde(default = "default_full_read")]
    pub max_full_read_size: u64,
    #[serde(default = "default_patch")]
    pub max_patch_size: u64,
    #[serde(default)]
    pub allowed_origins: Vec<String>,
    #[serde(default)]
    pub roots: Vec<RootConfig>,
    /// Destructive calls need the agent's signed receipt (RECEIPTS.md §2).
    #[serde(default)]
    pub require_receipts: Option<RequireReceiptsConfig>,
    /// The server's ledger (used receipts, idempotency keys' outcomes),
    /// relative to the working directory like the roots; default:
    /// `<config file stem>.ledger.db` beside the config.
    #[serde(default)]
    pub ledger: Option<PathBuf>,
}

/// `require_receipts` as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RequireReceiptsConfig {
    /// The agent's JWKS: a URL (`http://127.0.0.1:8080/.well-known/jwks.json`) or a file.
    pub jwks: String,
    /// The agent's `iss`: its public base URL.
    pub issuer: String,
    /// The name the agent calls this server (default `filesystem`).
    #[serde(default = "default_server_name")]
    pub server_name: String,
}

fn default_server_name() -> String {
    "filesystem".into()
}

/// One root as written.
#[derive(Clone, Debug, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct RootConfig {
    pub name: String,
    pub path: PathBuf,
    pub allowed_tools: Vec<String>,
}

/// A checked root: its resolved directory and its tools, `*` expanded.
#[derive(Clone, Debug, PartialEq)]
pub struct RootSpec {
    pub name: String,
    /// Absolute, symlinks resolved (never shown to callers).
    pub dir: PathBuf,
    /// Sorted.
    pub tools: Vec<String>,
}

impl RootSpec {
    /// No mutating tool allowed.
    pub fn read_only(&self) -> bool {
        !self
            .tools
            .iter()
            .any(|t| MUTATING_TOOLS.contains(&t.as_str()))
    }

    pub fn allows(&self, tool: &str) -> bool {
        self.tools.iter().any(|t| t == tool)
    }
}

/// A checked config.
#[derive(Clone, Debug)]
pub struct Checked {
    pub host: String,
    pub port: u16,
    pub max_full_read_size: u64,
    pub max_patch_size: u64,
    pub allowed_origins: Vec<String>,
    /// Sorted by name.
    pub roots: Vec<RootSpec>,
    pub require_receipts: Option<mcp_serve::guard::RequireReceipts>,
    /// As written (relative: to the working directory); [`load`] puts the
    /// default beside the config file.
    pub ledger: Option<PathBuf>,
}

/// Why the config cannot be used: the file, then each problem's key path
/// and what to do, on one line.
#[derive(Debug)]
pub struct ConfigError {
    pub file: String,
    pub problems: Vec<(String, String)>,
}

impl fmt::Display for ConfigError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: ", self.file)?;
        for (i, (key, what)) in self.problems.iter().enumerate() {
            if i > 0 {
                write!(f, "; ")?;
            }
            if key.is_empty() {
                write!(f, "{what}")?;
            } else {
                write!(f, "{key}: {what}")?;
            }
        }
        Ok(())
    }
}

impl std::error::Error for ConfigError {}

/// Reads and checks the config at `path`.
pub fn load(path: &Path) -> Result<Checked, ConfigError> {
    let file = path.display().to_string();
    let text = std::fs::read_to_string(path).map_err(|e| ConfigError {
        file: file.clone(),
        problems: vec![(
            String::new(),
            format!(
                "cannot read it ({e}); pass --config PATH, or create config/mcp-filesystem.yaml"
            ),
        )],
    })?;
    let mut checked = parse(&text).map_err(|problems| ConfigError { file, problems })?;
    let dir = path.parent().unwrap_or(Path::new("."));
    let stem = path
        .file_stem()
        .map_or("mcp-filesystem".into(), |s| s.to_string_lossy().to_string());
    if checked.ledger.is_none() {
        checked.ledger = Some(dir.join(format!("{stem}.ledger.db")));
    }
    Ok(checked)
}

/// Checks a config's text (relative root paths are relative to the
/// working directory, as in the Go original).
pub fn parse(text: &str) -> Result<Checked, Vec<(String, String)>> {
    let de = serde_yaml::Deserializer::from_str(text);
    let raw: FsConfig = serde_path_to_error::deserialize(de).map_err(|e| {
        let key = e.path().to_string();
        let key = if key == "." { String::new() } else { key };
        // serde_yaml already names the key inside some messages; say it once.
        let what = e.into_inner().to_string();
        let what = match what.strip_prefix(&format!("{key}: ")) {
            Some(rest) if !key.is_empty() => rest.to_string(),
            _ => what,
        };
        vec![(key, what)]
    })?;
    check(raw)
}

fn valid_name(n: &str) -> bool {
    let b = n.as_bytes();
    !b.is_empty()
        && b.len() <= 64
        && b[0].is_ascii_alphanumeric()
        && b.iter()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, b'_' | b'.' | b'-'))
}

fn check(raw: FsConfig) -> Result<Checked, Vec<(String, String)>> {
    let mut problems: Vec<(String, String)> = Vec::new();
    if raw.max_full_read_size == 0 {
        problems.push((
            "max_full_read_size".into(),
            "must be more than 0 (bytes; the default is 1048576)".into(),
        ));
    }
    if raw.roots.is_empty() {
        problems.push((
            "roots".into(),
            "no roots: list at least one {name, path, allowed_tools}".into(),
        ));
    }
    let mut roots: Vec<RootSpec> = Vec::new();
    for (i, r) in raw.roots.iter().enumerate() {
        let key = format!("roots[{i}]");
        if !valid_name(&r.name) {
            problems.push((
                format!("{key}.name"),
                format!(
                    "{:?} is not a valid root name: use letters, digits, _ . - (at most 64, starting with a letter or digit)",
                    r.name
                ),
            ));
        } else if raw.roots[..i].iter().any(|o| o.name == r.name) {
            problems.push((
                format!("{key}.name"),
                format!(
                    "root {} is listed twice: give each root its own name",
                    r.name
                ),
            ));
        }
        let mut tools: Vec<String> = Vec::new();
        for t in &r.allowed_tools {
            match t.as_str() {
                "*" => tools.extend(ROOT_TOOLS.iter().map(|s| s.to_string())),
                "list_roots" => {}
                t if ROOT_TOOLS.contains(&t) => tools.push(t.to_string()),
                t => problems.push((
                    format!("{key}.allowed_tools"),
                    format!(
                        "unknown tool {t:?} on root {}: use \"*\" or some of {}",
                        r.name,
                        ROOT_TOOLS.join(", ")
                    ),
                )),
            }
        }
        tools.sort();
        tools.dedup();
        let shown = r.path.display();
        let dir = match std::fs::canonicalize(&r.path) {
            Ok(d) if d.is_dir() => Some(d),
            Ok(_) => {
                problems.push((
                    format!("{key}.path"),
                    format!("{shown} is not a directory: point the root at a directory"),
                ));
                None
            }
            Err(_) => {
                problems.push((
                    format!("{key}.path"),
                    format!("{shown} does not exist: create it with `mkdir -p {shown}`"),
                ));
                None
            }
        };
        if let Some(dir) = dir {
            roots.push(RootSpec {
                name: r.name.clone(),
                dir,
                tools,
            });
        }
    }
    // Equal or nested directories: compared by components, so /srv/ws and
    // /srv/ws-evil are siblings, not an overlap.
    for (i, a) in roots.iter().enumerate() {
        for b in &roots[i + 1..] {
            if a.dir.starts_with(&b.dir) || b.dir.starts_with(&a.dir) {
                problems.push((
                    "roots".into(),
                    format!(
                        "roots {} and {} overlap (one directory is the other or inside it): give each root its own directory",
                        a.name, b.name
                    ),
                ));
            }
        }
    }
    if !problems.is_empty() {
        return Err(problems);
    }
    roots.sort_by(|a, b| a.name.cmp(&b.name));
    Ok(Checked {
        host: raw.host,
        port: raw.port,
        max_full_read_size: raw.max_full_read_size,
        max_patch_size: raw.max_patch_size,
        allowed_origins: raw.allowed_origins,
        roots,
        require_receipts: raw
            .require_receipts
            .map(|r| mcp_serve::guard::RequireReceipts {
                jwks: r.jwks,
                issuer: r.issuer,
                server_name: r.server_name,
            }),
        ledger: raw.ledger,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml(dir: &Path, roots: &str) -> String {
        format!(
            "roots:\n{}",
            roots.replace("{D}", &dir.display().to_string())
        )
    }

    fn problems(text: &str) -> String {
        match parse(text) {
            Ok(_) => panic!("accepted:\n{text}"),
            Err(p) => format!("{p:?}"),
        }
    }

    #[test]
    fn a_good_config_expands_star_and_sorts() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ws")).unwrap();
        std::fs::create_dir_all(d.path().join("docs")).unwrap();
        let c = parse(&yaml(
            d.path(),
            "  - {name: ws, path: '{D}/ws', allowed_tools: ['*']}\n  - {name: docs, path: '{D}/docs', allowed_tools: [read_file, list_roots, glob]}\n",
        ))
        .unwrap();
        assert_eq!(c.port, 8091);
        assert_eq!(c.host, "127.0.0.1");
        assert_eq!(c.max_full_read_size, 1 << 20);
        assert_eq!(c.roots[0].name, "docs");
        assert_eq!(c.roots[0].tools, ["glob", "read_file"]);
        assert!(c.roots[0].read_only());
        assert_eq!(c.roots[1].tools.len(), 17);
        assert!(!c.roots[1].read_only());
    }

    #[test]
    fn typos_missing_dirs_bad_names_and_unknown_tools_are_named() {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("ws")).unwrap();
        let p = problems(&yaml(
            d.path(),
            "  - {name: ws, path: '{D}/ws', allowed_tool: ['*']}\n",
        ));
        assert!(p.contains("allowed_tool"), "{p}");
        let p = problems(&yaml(
            d.path(),
            "  - {name: ws, path: '{D}/nope', allowed_tools: ['*']}\n",
        ));
        assert!(p.contains("roots[0].path") && p.contains("mkdir -p"), "{p}");
        let p = problems(&yaml(
            d.path(),
            "  - {name: '-ws', path: '{D}/ws', allowed_tools: ['*']}\n",
        ));
        assert!(p.contains("roots[0].name"), "{p}");
        let p = problems(&yaml(
            d.path(),
            "  - {name: ws, path: '{D}/ws', allowed_tools: [rm_rf]}\n",
        ));
        assert!(p.contains("rm_rf") && p.contains("ws"), "{p}");
        let p = problems("roots: []\n");
        assert!(p.contains("no roots"), "{p}");
        let p = problems(&yaml(
            d.path(),
            "  - {name: ws, path: '{D}/ws', allowed_tools: []}\n  - {name: ws, path: '{D}/ws', allowed_tools: []}\n",
        ));
        assert!(p.contains("twice"), "{p}");
        let p = problems(&format!(
            "max_full_read_size: 0\n{}",
            yaml(
                d.path(),
                "  - {name: ws, path: '{D}/ws', allowed_tools: []}\n"
            )
        ));
        assert!(p.contains("max_full_read_size"), "{p}");
    }

    #[test]
    fn the_shipped_config_is_valid() {
        let text = std::fs::read_to_string(
            Path::new(env!("CARGO_MANIFEST_DIR")).join("../config/mcp-filesystem.yaml"),
        )
        .unwrap();
        let d = tempfile::tempdir().unwrap();
        for sub in ["workspace", "docs"] {
            std::fs::create_dir_all(d.path().join(sub)).unwrap();
        }
        let text = text.replace("./data/", &format!("{}/", d.path().display()));
        let c = parse(&text).unwrap();
        assert_eq!(c.roots.len(), 2);
        assert!(c.roots[0].read_only() && !c.roots[1].read_only());
    }

    #[test]
    fn nested_or_equal_roots_overlap_but_prefix_siblings_do_not() {
        let d = tempfile::tempdir().unwrap();
        for sub in ["ws/inner", "ws-evil"] {
            std::fs::create_dir_all(d.path().join(sub)).unwrap();
        }
        let p = problems(&yaml(
            d.path(),
            "  - {name: a, path: '{D}/ws', allowed_tools: []}\n  - {name: b, path: '{D}/ws/inner', allowed_tools: []}\n",
        ));
        assert!(p.contains("overlap"), "{p}");
        // The same directory through a symlink is the same directory.
        std::os::unix::fs::symlink(d.path().join("ws"), d.path().join("alias")).unwrap();
        let p = problems(&yaml(
            d.path(),
            "  - {name: a, path: '{D}/ws', allowed_tools: []}\n  - {name: b, path: '{D}/alias', allowed_tools: []}\n",
        ));
        assert!(p.contains("overlap"), "{p}");
        assert!(parse(&yaml(
            d.path(),
            "  - {name: a, path: '{D}/ws', allowed_tools: []}\n  - {name: b, path: '{D}/ws-evil', allowed_tools: []}\n",
        ))
        .is_ok());
    }
}
