//! `stat_file`, `hash_file` and `permissions_file` (MCP-FILESYSTEM.md
//! §5.9–§5.11). A symlink is described itself; of a target outside the
//! root nothing is said but that it is `external`.

use super::context::{
    Args, Fs, Outcome, ToolError, kind_of, lookup, rel_path, sandbox_error, time,
};
use crate::sandbox::TargetType;
use cap_std::fs::MetadataExt;
use serde_json::{Value, json};
use sha2::Digest;
use std::io::Read;

/// `stat_file`.
pub fn stat_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("stat_file", args, "root")?;
    let (_, rel, r, m) = lookup(root, args, false)?;
    let ft = m.file_type();
    let kind = kind_of(&ft);
    let mut out = json!({
        "name": rel.name().unwrap_or(&root.name),
        "path": rel.display(),
        "type": kind,
        "size": m.len(),
        "is_directory": ft.is_dir(),
        "is_symlink": ft.is_symlink(),
        "modified_at": time(m.modified()),
        "accessed_at": time(m.accessed()),
    });
    if let Some(c) = time(m.created()) {
        out["created_at"] = json!(c);
    }
    if ft.is_symlink() {
        let t = root.target_type(&r.path);
        out["target_type"] = json!(t.as_str());
        if matches!(
            t,
            TargetType::File | TargetType::Directory | TargetType::Other
        ) && let Ok(target) = root.resolve(&r.path, true)
            && let Ok(tm) = root.dir().metadata(target.path.as_path())
        {
            out["target"] = json!(target.path.display());
            out["size"] = json!(tm.len());
            out["is_directory"] = json!(tm.is_dir());
        }
    }
    Ok(out)
}

/// The hash functions `hash_file` offers.
#[derive(Clone, Copy)]
enum Algo {
    Md5,
    Sha1,
    Sha256,
    Sha512,
}

impl Algo {
    fn parse(s: &str) -> Option<Algo> {
        match s.to_ascii_lowercase().replace('-', "").as_str() {
            "md5" => Some(Algo::Md5),
            "sha1" => Some(Algo::Sha1),
            "sha256" => Some(Algo::Sha256),
            "sha512" => Some(Algo::Sha512),
            _ => None,
        }
    }

    fn name(self) -> &'static str {
        match self {
            Algo::Md5 => "md5",
            Algo::Sha1 => "sha1",
            Algo::Sha256 => "sha256",
            Algo::Sha512 => "sha512",
        }
    }
}

/// Streams `r` through `D` in 64 KiB chunks; lowercase hex and the size.
fn digest<D: Digest>(mut r: impl Read) -> std::io::Result<(String, u64)> {
    let mut h = D::new();
    let mut buf = vec![0u8; 64 * 1024];
    let mut size = 0u64;
    loop {
        let n = r.read(&mut buf)?;
        if n == 0 {
            break;
        }
        size += n as u64;
        h.update(&buf[..n]);
    }
    let hex = h.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Ok((hex, size))
}

/// `hash_file`.
pub fn hash_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("hash_file", args, "root")?;
    let (given, rel) = rel_path(root, args, "path", None)?;
    let name = args.str("algorithm")?.unwrap_or("sha256");
    let algo = Algo::parse(name).ok_or_else(|| {
        ToolError(format!(
            "hash_file: unsupported algorithm {name:?}; use md5, sha1, sha256 or sha512"
        ))
    })?;
    let f = root
        .open_read(&rel)
        .map_err(|e| sandbox_error(&given, root, e))?;
    let r = match algo {
        Algo::Md5 => digest::<md5::Md5>(f),
        Algo::Sha1 => digest::<sha1::Sha1>(f),
        Algo::Sha256 => digest::<sha2::Sha256>(f),
        Algo::Sha512 => digest::<sha2::Sha512>(f),
    };
    let (hash, size) = r.map_err(|e| sandbox_error(&given, root, e.into()))?;
    Ok(json!({"path": rel.display(), "algorithm": algo.name(), "hash": hash, "size": size}))
}

/// `ls -l` style: type, then rwx triples with s/S, t/T.
fn mode_string(mode: u32, kind: char) -> String {
    let mut s = String::with_capacity(10);
    s.push(kind);
    let bits = [
        (0o400, 'r'),
        (0o200, 'w'),
        (0o100, 'x'),
        (0o040, 'r'),
        (0o020, 'w'),
        (0o010, 'x'),
        (0o004, 'r'),
        (0o002, 'w'),
        (0o001, 'x'),
    ];
    for (i, (bit, c)) in bits.iter().enumerate() {
        let set = mode & bit != 0;
        let special = match i {
            2 => mode & 0o4000 != 0,
            5 => mode & 0o2000 != 0,
            8 => mode & 0o1000 != 0,
            _ => false,
        };
        s.push(match (special, set, i) {
            (true, true, 8) => 't',
            (true, false, 8) => 'T',
            (true, true, _) => 's',
            (true, false, _) => 'S',
            (false, true, _) => *c,
            (false, false, _) => '-',
        });
    }
    s
}

/// `permissions_file`: follows in-root links, refuses outside ones.
pub fn permissions_file(fs: &Fs, args: &Args<'_>) -> Outcome {
    let root = fs.root("permissions_file", args, "root")?;
    let (_, rel, _, m) = lookup(root, args, true)?;
    let ft = m.file_type();
    let kind = if ft.is_dir() {
        'd'
    } else if ft.is_file() {
        '-'
    } else if ft.is_symlink() {
        'l'
    } else {
        '?'
    };
    let mode = m.mode() & 0o7777;
    let (uid, gid) = (m.uid(), m.gid());
    let owner = nix::unistd::User::from_uid(nix::unistd::Uid::from_raw(uid))
        .ok()
        .flatten()
        .map_or_else(|| uid.to_string(), |u| u.name);
    let group = nix::unistd::Group::from_gid(nix::unistd::Gid::from_raw(gid))
        .ok()
        .flatten()
        .map_or_else(|| gid.to_string(), |g| g.name);
    Ok(json!({
        "path": rel.display(),
        "mode": format!("{mode:04o}"),
        "mode_string": mode_string(mode, kind),
        "owner": owner,
        "group": group,
        "uid": uid,
        "gid": gid,
    }) as Value)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn modes_read_like_ls() {
        assert_eq!(mode_string(0o644, '-'), "-rw-r--r--");
        assert_eq!(mode_string(0o4755, '-'), "-rwsr-xr-x");
        assert_eq!(mode_string(0o1777, 'd'), "drwxrwxrwt");
        assert_eq!(mode_string(0o2644, '-'), "-rw-r-Sr--");
    }

    #[test]
    fn algorithms_by_any_common_spelling() {
        for (s, n) in [
            ("SHA-256", "sha256"),
            ("md5", "md5"),
            ("Sha1", "sha1"),
            ("sha512", "sha512"),
        ] {
            assert_eq!(Algo::parse(s).unwrap().name(), n);
        }
        assert!(Algo::parse("crc32").is_none());
        let (h, n) = digest::<sha2::Sha256>(&b"abc"[..]).unwrap();
        assert_eq!(n, 3);
        assert_eq!(
            h,
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let (h, _) = digest::<md5::Md5>(&b"abc"[..]).unwrap();
        assert_eq!(h, "900150983cd24fb0d6963f7d28e17f72");
    }
}
