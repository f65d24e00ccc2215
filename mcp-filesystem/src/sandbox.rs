//! A root as a directory handle, and the one symlink rule
//! (MCP-FILESYSTEM.md §4.2–§4.3).
//!
//! [`Root::resolve`] walks a cleaned path one component at a time from the
//! root's handle (`lstat`, and `readlink` for links) and returns the same
//! location as a symlink-free path, or refuses it: a link is followed only
//! when everything it leads to stays inside the root, whether it is
//! absolute or relative, and whether its target exists or dangles. An
//! absolute target counts as inside only when it lies under the root's own
//! directory (compared by components, so `/srv/ws-evil` is not under
//! `/srv/ws`); it is then read relative to the root.
//!
//! Resolving is not what keeps a caller inside: every operation then acts
//! on the resolved path through `cap_std`, relative to the root's handle,
//! where the kernel refuses anything that would leave it (`openat2` with
//! `RESOLVE_BENEATH`), and final components are opened with `O_NOFOLLOW`.
//! A link swapped in after resolving therefore gives an error, never an
//! escape (the race of the Go original and of the official server).

use super::path::RelPath;
use cap_fs_ext::{FollowSymlinks, OpenOptionsFollowExt, OpenOptionsSyncExt};
use cap_std::fs::{Dir, File, Metadata, OpenOptions};
use std::io;
use std::path::{Component, Path, PathBuf};

/// How many links one resolution may follow (as Linux's `MAXSYMLINKS`).
const MAX_LINKS: u32 = 40;

/// A configured root, opened.
pub struct Root {
    pub name: String,
    dir: Dir,
    /// The root's own absolute directory: only to recognise absolute link
    /// targets that point inside. Never shown to callers.
    host: PathBuf,
}

/// Why a path cannot be used. Messages never carry host paths.
#[derive(Debug)]
pub enum SandboxError {
    /// It resolves outside the root (a link that leaves, `..` above the
    /// root inside a link target, or the kernel's refusal).
    Outside,
    /// Too many links, or a loop.
    Loop,
    /// A component before the last does not exist.
    NotFound,
    /// A component before the last is not a directory.
    NotDir,
    /// Not a regular file (FIFO, socket, device, directory).
    NotRegular,
    Io(io::Error),
}

impl std::fmt::Display for SandboxError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SandboxError::Outside => write!(f, "resolves outside the root"),
            SandboxError::Loop => write!(f, "has too many levels of symbolic links"),
            SandboxError::NotFound => write!(f, "does not exist"),
            SandboxError::NotDir => write!(f, "goes through something that is not a folder"),
            SandboxError::NotRegular => write!(f, "is not a regular file"),
            SandboxError::Io(e) => write!(f, "cannot be used ({})", io_kind(e)),
        }
    }
}

/// An I/O error in words, without the host path `io::Error` may carry.
fn io_kind(e: &io::Error) -> String {
    match e.kind() {
        io::ErrorKind::PermissionDenied => "permission denied".into(),
        io::ErrorKind::NotFound => "not found".into(),
        k => format!("{k}").to_lowercase(),
    }
}

impl From<io::Error> for SandboxError {
    fn from(e: io::Error) -> Self {
        classify(e)
    }
}

/// cap-std reports an escape as `PermissionDenied` with no OS error code
/// (a real `EACCES` always has one); `ELOOP` is a link where `O_NOFOLLOW`
/// refused one, or a loop.
fn classify(e: io::Error) -> SandboxError {
    if e.kind() == io::ErrorKind::PermissionDenied && e.raw_os_error().is_none() {
        return SandboxError::Outside;
    }
    match e.raw_os_error() {
        Some(libc::ELOOP) => SandboxError::Loop,
        Some(libc::EXDEV) => SandboxError::Outside,
        Some(libc::ENOTDIR) => SandboxError::NotDir,
        _ if e.kind() == io::ErrorKind::NotFound => SandboxError::NotFound,
        _ => SandboxError::Io(e),
    }
}

/// Where a path leads, once resolved.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Resolved {
    /// The location, with no symlink in it (the last component may be a
    /// link when it was not to be followed).
    pub path: RelPath,
    /// Whether something exists there (a dangling in-root link's target,
    /// or the new name of a file to create, does not).
    pub exists: bool,
}

/// What a symlink leads to, as listings and `stat_file` say it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TargetType {
    File,
    Directory,
    /// Something else inside the root (FIFO, socket, device).
    Other,
    /// Outside the root: nothing more is said about it.
    External,
    /// Dangling, or a loop, inside the root.
    Missing,
}

impl TargetType {
    pub fn as_str(self) -> &'static str {
        match self {
            TargetType::File => "file",
            TargetType::Directory => "directory",
            TargetType::Other => "other",
            TargetType::External => "external",
            TargetType::Missing => "missing",
        }
    }
}

impl Root {
    /// Opens the root directory `dir` (absolute, already resolved by the
    /// config check).
    pub fn open(name: &str, dir: &Path) -> io::Result<Root> {
        let handle = Dir::open_ambient_dir(dir, cap_std::ambient_authority())?;
        Ok(Root {
            name: name.to_string(),
            dir: handle,
            host: dir.to_path_buf(),
        })
    }

    /// The root's directory handle: every operation goes through it.
    pub fn dir(&self) -> &Dir {
        &self.dir
    }

    /// Resolves `path` by the symlink rule. `follow_last`: follow a link
    /// in the last component (content operations), or leave it (name
    /// operations: remove, rename, stat, listings act on the link itself).
    pub fn resolve(&self, path: &RelPath, follow_last: bool) -> Result<Resolved, SandboxError> {
        // `todo` holds the components still to walk, last first; `done` the
        // symlink-free prefix walked so far.
        let mut todo: Vec<String> = path.components().iter().rev().cloned().collect();
        let mut done: Vec<String> = Vec::new();
        let mut links = 0u32;
        while let Some(c) = todo.pop() {
            if c == ".." {
                if done.pop().is_none() {
                    return Err(SandboxError::Outside);
                }
                continue;
            }
            let mut here = done.clone();
            here.push(c.clone());
            let here_path: PathBuf = here.iter().collect();
            let meta = match self.dir.symlink_metadata(&here_path) {
                Ok(m) => m,
                Err(e) if e.kind() == io::ErrorKind::NotFound => {
                    // Missing: the rest must be plain names to create.
                    if todo.iter().any(|t| t == "..") {
                        return Err(SandboxError::NotFound);
                    }
                    here.extend(todo.into_iter().rev());
                    return Ok(Resolved {
                        path: RelPath::from_parts(here),
                        exists: false,
                    });
                }
                Err(e) => return Err(classify(e)),
            };
            let last = todo.is_empty();
            if meta.is_symlink() && (!last || follow_last) {
                links += 1;
                if links > MAX_LINKS {
                    return Err(SandboxError::Loop);
                }
                let target = self.dir.read_link_contents(&here_path).map_err(classify)?;
                let rest = self.inside(&target)?;
                if target.is_absolute() {
                    done.clear();
                }
                todo.extend(rest.into_iter().rev());
                continue;
            }
            if !last && !meta.is_dir() {
                return Err(SandboxError::NotDir);
            }
            done = here;
        }
        Ok(Resolved {
            path: RelPath::from_parts(done),
            exists: true,
        })
    }

    /// A link target's components, to be walked on from the link's folder
    /// (relative) or from the root (absolute under the root's directory).
    /// An absolute target anywhere else leaves the root.
    fn inside(&self, target: &Path) -> Result<Vec<String>, SandboxError> {
        let rel: &Path = if target.is_absolute() {
            target
                .strip_prefix(&self.host)
                .map_err(|_| SandboxError::Outside)?
        } else {
            target
        };
        let mut parts = Vec::new();
        for c in rel.components() {
            match c {
                Component::Normal(n) => match n.to_str() {
                    Some(s) => parts.push(s.to_string()),
                    // Not UTF-8: a caller could not name it either; refuse
                    // rather than guess.
                    None => return Err(SandboxError::NotFound),
                },
                Component::ParentDir => parts.push("..".into()),
                Component::CurDir => {}
                Component::RootDir | Component::Prefix(_) => return Err(SandboxError::Outside),
            }
        }
        Ok(parts)
    }

    /// What the link at `path` (already resolved up to its parent) leads
    /// to; nothing about a target outside the root.
    pub fn target_type(&self, path: &RelPath) -> TargetType {
        match self.resolve(path, true) {
            Ok(r) if r.exists => match self.dir.metadata(r.path.as_path()) {
                Ok(m) if m.is_dir() => TargetType::Directory,
                Ok(m) if m.is_file() => TargetType::File,
                Ok(_) => TargetType::Other,
                Err(e) => match classify(e) {
                    SandboxError::Outside => TargetType::External,
                    _ => TargetType::Missing,
                },
            },
            Ok(_) => TargetType::Missing,
            Err(SandboxError::Outside) => TargetType::External,
            Err(_) => TargetType::Missing,
        }
    }

    /// `lstat` of a resolved path (the link itself when the last
    /// component is one).
    pub fn lstat(&self, path: &RelPath) -> Result<Metadata, SandboxError> {
        self.dir.symlink_metadata(path.as_path()).map_err(classify)
    }

    /// Opens the regular file at `path` (resolved, following in-root
    /// links) for reading: the last component with `O_NOFOLLOW` (a link
    /// swapped in since resolving is refused) and `O_NONBLOCK` (a FIFO
    /// never hangs), checked with `fstat` after opening.
    pub fn open_read(&self, path: &RelPath) -> Result<File, SandboxError> {
        let r = self.resolve(path, true)?;
        if !r.exists {
            return Err(SandboxError::NotFound);
        }
        // Refuse anything but a regular file before opening it (opening a
        // device can have effects), and again on the open descriptor.
        let before = self.lstat(&r.path)?;
        if !before.is_file() {
            return Err(SandboxError::NotRegular);
        }
        let mut o = OpenOptions::new();
        o.read(true);
        o.follow(FollowSymlinks::No);
        o.nonblock(true);
        let f = self.dir.open_with(r.path.as_path(), &o).map_err(classify)?;
        if !f.metadata().map_err(classify)?.is_file() {
            return Err(SandboxError::NotRegular);
        }
        Ok(f)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Read;
    use std::os::unix::fs::symlink;

    /// A temp dir with `ws` (the root), `ws-evil` (a sibling sharing its
    /// name prefix) and `outside`, each holding a secret, and hostile
    /// links inside the root.
    struct World {
        _tmp: tempfile::TempDir,
        base: PathBuf,
        root: Root,
    }

    fn world() -> World {
        let tmp = tempfile::tempdir().unwrap();
        let base = std::fs::canonicalize(tmp.path()).unwrap();
        let ws = base.join("ws");
        for d in ["ws/sub/deep", "ws-evil", "outside/dir"] {
            std::fs::create_dir_all(base.join(d)).unwrap();
        }
        std::fs::write(ws.join("a.txt"), "inside").unwrap();
        std::fs::write(ws.join("sub/deep/note.md"), "deep").unwrap();
        std::fs::write(base.join("outside/secret"), "SECRET").unwrap();
        std::fs::write(base.join("ws-evil/secret"), "SECRET").unwrap();
        let l = |target: &Path, at: &str| symlink(target, ws.join(at)).unwrap();
        // Leaving: absolute, relative, to a sibling with the same prefix,
        // to a directory, dangling (absolute and relative), chained.
        l(&base.join("outside/secret"), "abs_out");
        l(Path::new("../outside/secret"), "rel_out");
        l(Path::new("../ws-evil/secret"), "prefix_out");
        l(&base.join("outside/dir"), "dir_out");
        l(&base.join("outside/new-file"), "dangling_abs_out");
        l(Path::new("../outside/new-file"), "dangling_rel_out");
        l(Path::new("rel_out"), "chain_out");
        l(Path::new("sub/../../outside/secret"), "climb_out");
        // Staying: relative, absolute under the root, a directory, chained,
        // dangling inside; loops.
        l(Path::new("a.txt"), "in_rel");
        l(&ws.join("sub/deep/note.md"), "in_abs");
        l(Path::new("sub/deep"), "in_dir");
        l(Path::new("in_rel"), "in_chain");
        l(Path::new("sub/../a.txt"), "in_climb");
        l(Path::new("not-yet"), "in_dangling");
        l(Path::new("loop_b"), "loop_a");
        l(Path::new("loop_a"), "loop_b");
        l(Path::new("."), "self_dir");
        let root = Root::open("ws", &ws).unwrap();
        World {
            _tmp: tmp,
            base,
            root,
        }
    }

    fn resolve(w: &World, p: &str, follow: bool) -> Result<Resolved, SandboxError> {
        w.root.resolve(&RelPath::parse(p).unwrap(), follow)
    }

    fn read(w: &World, p: &str) -> Result<String, SandboxError> {
        let mut s = String::new();
        w.root
            .open_read(&RelPath::parse(p).unwrap())?
            .read_to_string(&mut s)
            .unwrap();
        Ok(s)
    }

    #[test]
    fn links_that_leave_are_never_followed() {
        let w = world();
        for p in [
            "abs_out",
            "rel_out",
            "prefix_out",
            "dir_out",
            "dir_out/x",
            "dangling_abs_out",
            "dangling_rel_out",
            "chain_out",
            "climb_out",
        ] {
            assert!(
                matches!(resolve(&w, p, true), Err(SandboxError::Outside)),
                "{p}: {:?}",
                resolve(&w, p, true)
            );
            assert!(read(&w, p).is_err(), "{p} was read");
        }
        // The link itself can still be named (remove, stat, rename).
        let r = resolve(&w, "abs_out", false).unwrap();
        assert_eq!((r.path.display().as_str(), r.exists), ("abs_out", true));
        for (p, t) in [
            ("abs_out", TargetType::External),
            ("dir_out", TargetType::External),
            ("dangling_abs_out", TargetType::External),
            ("prefix_out", TargetType::External),
            ("in_rel", TargetType::File),
            ("in_abs", TargetType::File),
            ("in_dir", TargetType::Directory),
            ("in_dangling", TargetType::Missing),
            ("loop_a", TargetType::Missing),
        ] {
            assert_eq!(w.root.target_type(&RelPath::parse(p).unwrap()), t, "{p}");
        }
        // Nothing was created outside.
        assert!(!w.base.join("outside/new-file").exists());
    }

    #[test]
    fn links_that_stay_inside_are_followed() {
        let w = world();
        for (p, to) in [
            ("in_rel", "a.txt"),
            ("in_abs", "sub/deep/note.md"),
            ("in_dir/note.md", "sub/deep/note.md"),
            ("in_chain", "a.txt"),
            ("in_climb", "a.txt"),
            ("self_dir/self_dir/a.txt", "a.txt"),
            ("/sub/./deep/../deep/note.md", "sub/deep/note.md"),
        ] {
            let r = resolve(&w, p, true).unwrap();
            assert_eq!(r.path.display(), to, "{p}");
            assert!(r.exists);
        }
        assert_eq!(read(&w, "in_abs").unwrap(), "deep");
        assert_eq!(read(&w, "in_dir/note.md").unwrap(), "deep");
        // A dangling link inside: its target is the (missing) place.
        let r = resolve(&w, "in_dangling", true).unwrap();
        assert_eq!((r.path.display().as_str(), r.exists), ("not-yet", false));
        let r = resolve(&w, "new/dir/file.txt", true).unwrap();
        assert_eq!(r.path.display(), "new/dir/file.txt");
        assert!(!r.exists);
    }

    #[test]
    fn loops_files_as_folders_and_special_files_fail_closed() {
        let w = world();
        assert!(matches!(
            resolve(&w, "loop_a", true),
            Err(SandboxError::Loop)
        ));
        assert!(matches!(
            resolve(&w, "a.txt/x", true),
            Err(SandboxError::NotDir)
        ));
        // A FIFO is refused at once, never opened for a blocking read.
        let fifo = w.base.join("ws/pipe");
        let status = std::process::Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap();
        assert!(status.success());
        assert!(matches!(read(&w, "pipe"), Err(SandboxError::NotRegular)));
        assert!(matches!(read(&w, "sub"), Err(SandboxError::NotRegular)));
        assert!(matches!(read(&w, "nope"), Err(SandboxError::NotFound)));
    }

    #[test]
    fn the_kernel_refuses_a_link_swapped_in_after_resolving() {
        let w = world();
        let r = resolve(&w, "sub/deep/note.md", true).unwrap();
        // Swap the folder for a link to the outside after the check.
        let ws = w.base.join("ws");
        std::fs::rename(ws.join("sub/deep"), ws.join("sub/deep-moved")).unwrap();
        symlink(w.base.join("outside/dir"), ws.join("sub/deep")).unwrap();
        std::fs::write(w.base.join("outside/dir/note.md"), "SECRET").unwrap();
        let mut o = OpenOptions::new();
        o.read(true);
        let err = w.root.dir().open_with(r.path.as_path(), &o).unwrap_err();
        assert!(matches!(classify(err), SandboxError::Outside));
        // And through the API: resolving again refuses it.
        assert!(read(&w, "sub/deep/note.md").is_err());
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Any path built from the world's names, links and `..`: either
        /// refused, or a place whose real location is inside the root.
        #[test]
        fn no_path_resolves_outside(parts in proptest::collection::vec(
            proptest::sample::select(vec![
                "a.txt", "sub", "deep", "note.md", "..", ".", "", "abs_out", "rel_out",
                "prefix_out", "dir_out", "dangling_abs_out", "chain_out", "climb_out",
                "in_rel", "in_abs", "in_dir", "in_chain", "in_climb", "in_dangling",
                "loop_a", "self_dir", "x",
            ]),
            0..8,
        ), follow in proptest::bool::ANY) {
            let w = world();
            let ws = w.base.join("ws");
            let text = parts.join("/");
            let Ok(rel) = RelPath::parse(&text) else { return Ok(()) };
            if let Ok(r) = w.root.resolve(&rel, follow) {
                // The resolved path holds no link but maybe the last.
                let host = ws.join(r.path.as_path());
                let parent = if r.path.is_root() {
                    ws.clone()
                } else {
                    std::fs::canonicalize(host.parent().unwrap_or(&ws)).unwrap_or(ws.clone())
                };
                proptest::prop_assert!(parent.starts_with(&ws), "{text} -> {:?}", r.path);
                if r.exists && follow {
                    let real = std::fs::canonicalize(&host).unwrap();
                    proptest::prop_assert!(real.starts_with(&ws), "{text} -> {real:?}");
                }
            }
            if let Ok(mut f) = w.root.open_read(&rel) {
                let mut s = String::new();
                let _ = f.read_to_string(&mut s);
                proptest::prop_assert!(s != "SECRET", "{text} read a secret");
            }
        }
    }

    #[test]
    fn messages_carry_no_host_path() {
        let w = world();
        let host = w.base.display().to_string();
        for p in ["abs_out", "loop_a", "a.txt/x", "nope", "pipe", "sub"] {
            if let Err(e) = read(&w, p) {
                assert!(!e.to_string().contains(&host), "{p}: {e}");
            }
        }
    }
}
