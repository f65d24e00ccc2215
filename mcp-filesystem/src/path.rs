//! A caller's path, read lexically (MCP-FILESYSTEM.md §4.1), before any
//! file is touched.
//!
//! Paths are root-relative with `/` separators; `""`, `"."` and `"/"` name
//! the root and a leading `/` means the root (the chroot view: `/etc/passwd`
//! is `<root>/etc/passwd`). `\`, `%2e`, fullwidth dots and other look-alikes
//! are ordinary name characters: names are used byte for byte. Refused: NUL
//! bytes, more than 4,096 bytes, a component over 255 bytes, and `..` that
//! climbs above the root after cleaning (`a/../b` is fine).

use std::fmt;

/// Longest path accepted, in bytes.
pub const MAX_PATH: usize = 4096;
/// Longest component accepted, in bytes (the usual `NAME_MAX`).
pub const MAX_NAME: usize = 255;

/// A cleaned root-relative path: its components, none of them empty, `.`
/// or `..`. Empty = the root.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct RelPath(Vec<String>);

/// Why a path was refused before touching the disk.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum PathError {
    Nul,
    TooLong(usize),
    NameTooLong(usize),
    /// `..` climbs above the root.
    Escapes,
}

impl fmt::Display for PathError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            PathError::Nul => write!(f, "contains a NUL byte"),
            PathError::TooLong(n) => {
                write!(
                    f,
                    "is {n} bytes long; paths are limited to {MAX_PATH} bytes"
                )
            }
            PathError::NameTooLong(n) => write!(
                f,
                "has a {n}-byte name; names are limited to {MAX_NAME} bytes"
            ),
            PathError::Escapes => write!(f, "escapes the root"),
        }
    }
}

impl RelPath {
    /// Reads `path` as the tools take it.
    pub fn parse(path: &str) -> Result<RelPath, PathError> {
        if path.contains('\0') {
            return Err(PathError::Nul);
        }
        if path.len() > MAX_PATH {
            return Err(PathError::TooLong(path.len()));
        }
        let mut parts: Vec<String> = Vec::new();
        for c in path.split('/') {
            match c {
                "" | "." => {}
                ".." => {
                    if parts.pop().is_none() {
                        return Err(PathError::Escapes);
                    }
                }
                name if name.len() > MAX_NAME => return Err(PathError::NameTooLong(name.len())),
                name => parts.push(name.to_string()),
            }
        }
        Ok(RelPath(parts))
    }

    /// The root itself.
    pub fn is_root(&self) -> bool {
        self.0.is_empty()
    }

    pub fn components(&self) -> &[String] {
        &self.0
    }

    /// `a/b/c`, or `.` for the root: how results name a path.
    pub fn display(&self) -> String {
        if self.0.is_empty() {
            ".".into()
        } else {
            self.0.join("/")
        }
    }

    /// The path for a `cap_std::fs::Dir` call relative to the root handle
    /// (`.` for the root).
    pub fn as_path(&self) -> std::path::PathBuf {
        if self.0.is_empty() {
            ".".into()
        } else {
            self.0.iter().collect()
        }
    }

    /// The last component, if any.
    pub fn name(&self) -> Option<&str> {
        self.0.last().map(String::as_str)
    }

    /// The parent (the root's parent is the root).
    pub fn parent(&self) -> RelPath {
        let mut p = self.0.clone();
        p.pop();
        RelPath(p)
    }

    /// `self/name`.
    pub fn join(&self, name: &str) -> RelPath {
        let mut p = self.0.clone();
        p.push(name.to_string());
        RelPath(p)
    }

    pub(crate) fn from_parts(parts: Vec<String>) -> RelPath {
        RelPath(parts)
    }

    /// Whether `self` is `other` or lies beneath it.
    pub fn starts_with(&self, other: &RelPath) -> bool {
        self.0.len() >= other.0.len() && self.0[..other.0.len()] == other.0[..]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn p(s: &str) -> Result<String, PathError> {
        RelPath::parse(s).map(|r| r.display())
    }

    #[test]
    fn the_root_has_several_spellings() {
        for s in ["", ".", "/", "//", "./", "/./.", "a/.."] {
            assert_eq!(p(s).unwrap(), ".", "{s:?}");
        }
    }

    #[test]
    fn a_leading_slash_means_the_root_not_the_host() {
        assert_eq!(p("/etc/passwd").unwrap(), "etc/passwd");
        assert_eq!(p("a//b/./c/").unwrap(), "a/b/c");
        assert_eq!(p("a/../b").unwrap(), "b");
    }

    #[test]
    fn climbing_above_the_root_is_refused() {
        for s in ["..", "../x", "a/../../b", "/..", "a/b/../../../c"] {
            assert_eq!(p(s), Err(PathError::Escapes), "{s:?}");
        }
    }

    #[test]
    fn look_alikes_are_plain_names() {
        for s in [
            "..\\x",
            "%2e%2e/x",
            "\u{ff0e}\u{ff0e}/x",
            "...",
            "..a",
            "\u{2024}\u{2024}",
        ] {
            assert!(p(s).is_ok(), "{s:?}");
        }
        assert_eq!(p("%2e%2e/x").unwrap(), "%2e%2e/x");
    }

    #[test]
    fn nul_and_length_limits() {
        assert_eq!(p("a\0b"), Err(PathError::Nul));
        assert_eq!(p(&"a/".repeat(2500)), Err(PathError::TooLong(5000)));
        assert_eq!(p(&"x".repeat(256)), Err(PathError::NameTooLong(256)));
        assert!(p(&"x".repeat(255)).is_ok());
    }
}
