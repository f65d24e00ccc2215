#!/usr/bin/env python3
"""The drift check of `make lint`: docs/architecture.md names only what exists.

The architecture document is read by newcomers as the map of the code, so a
name in it that the code no longer has is a wrong turn. For every `code`
span of the document it fails when

- a path (`http/caller.rs`, `server/src/engine/`, `scripts/pg.sh`) names no
  file or folder: paths are tried from the repository root and from each
  crate's `src/`; a bare file name (`mod.rs` in "`engine/turn/` (`mod.rs`
  ...)") must exist in the folder the same table row or paragraph names
  before it, or anywhere when it names none;
- a Rust path (`domain::principal::may_decide`, `EngineError::AlreadyDecided`)
  has a last segment that no crate defines (fn, struct, enum, variant,
  trait, type, const, static, mod, macro);
- a snake_case word of its own (`waiting_approval`, `in_doubt`) appears
  nowhere in the sources: such words are status names, error codes,
  config keys or functions, and the document must not invent one.

Usage: scripts/check-docs.py [ROOT]   (exit 1 with one line per problem)
"""
import os
import re
import sys

DOCS = ["docs/architecture.md"]
CRATE_SRCS = [
    "server/src", "app/src", "frontend/src", "mcp-serve/src", "mcp-filesystem/src",
    "mcp-resources/src", "receipts/src", "test-support/src",
]
SOURCE_DIRS = CRATE_SRCS + ["server/tests", "server/benches", "scripts", "end2end", "config", "proto"]
SOURCE_EXT = (".rs", ".py", ".sh", ".ts", ".yaml", ".yml", ".sql", ".proto", ".toml", ".js")
FILE_EXT = (".rs", ".py", ".sh", ".ts", ".md", ".toml", ".yaml", ".yml", ".sql", ".proto", ".js", ".css", ".json")
# Words in code spans that are prose, protocol or tool names, not ours.
ALLOWED = {"make_lint", "cargo_leptos"}


def sources(root):
    text = []
    for d in SOURCE_DIRS:
        for dirpath, dirnames, files in os.walk(os.path.join(root, d)):
            dirnames[:] = [n for n in dirnames if n not in ("node_modules", "target", "test-results")]
            for f in files:
                if f.endswith(SOURCE_EXT):
                    with open(os.path.join(dirpath, f), encoding="utf-8", errors="replace") as fh:
                        text.append(fh.read())
    return "\n".join(text)


def all_files(root):
    names = set()
    for d in SOURCE_DIRS + ["docs", "testdata", "style", "public"]:
        for dirpath, dirnames, files in os.walk(os.path.join(root, d)):
            dirnames[:] = [n for n in dirnames if n not in ("node_modules", "target", "test-results")]
            names.update(files)
    return names


def resolve(root, p, near):
    """Where path `p` is, tried from the root, each crate's `src/` and the
    folders named before it in the same block; None when nowhere."""
    p = p.rstrip("/")
    for b in [""] + CRATE_SRCS + ["server"] + near:
        full = os.path.join(root, b, p)
        if os.path.exists(full):
            return os.path.relpath(full, root)
    return None


def ancestors(rel):
    """A resolved path's folders, nearest first (`server/src/engine/calls`,
    `server/src/engine`, ...), where a shorter path after it may start."""
    out = []
    d = rel if os.path.isdir(rel) else os.path.dirname(rel)
    while d and d not in ("", ".", "server", "server/src"):
        out.append(d)
        d = os.path.dirname(d)
    return out


def defined(code, name):
    item = r"(?:fn|struct|enum|trait|type|const|static|mod|macro_rules!)\s+" + re.escape(name) + r"\b"
    variant = r"^\s*" + re.escape(name) + r"\s*[({,]"
    return re.search(item, code) or re.search(variant, code, re.M)


def blocks(doc):
    """Table rows and paragraphs: the units in which a folder named first
    is where the bare file names after it live."""
    out, cur = [], []
    for line in doc.splitlines():
        if line.startswith("|") or not line.strip():
            if cur:
                out.append(" ".join(cur))
                cur = []
            if line.strip():
                out.append(line)
        else:
            cur.append(line)
    if cur:
        out.append(" ".join(cur))
    return out


def check(root):
    code = sources(root)
    files = all_files(root)
    problems = []
    for doc_path in DOCS:
        with open(os.path.join(root, doc_path), encoding="utf-8") as fh:
            doc = fh.read()
        doc = re.sub(r"```.*?```", "", doc, flags=re.S)  # diagrams, not names
        for block in blocks(doc):
            near = []
            for span in re.findall(r"`([^`\n]+)`", block):
                span = span.strip()
                if span.startswith("target/"):
                    continue  # build outputs
                if "/" in span and " " not in span and not span.startswith(("/", "http")) \
                        and "{" not in span and "*" not in span and "<" not in span \
                        and "::" not in span:
                    rel = resolve(root, span, near)
                    if rel is None:
                        problems.append(f"{doc_path}: `{span}` names no file or folder")
                    else:
                        cwd = os.getcwd()
                        os.chdir(root)
                        near[:0] = ancestors(rel)
                        os.chdir(cwd)
                elif re.fullmatch(r"[\w.-]+\.(" + "|".join(e[1:] for e in FILE_EXT) + ")", span):
                    ok = resolve(root, span, near) is not None if near else span in files
                    if not ok:
                        problems.append(f"{doc_path}: `{span}` is in none of {near or ['the tree']}")
                elif re.fullmatch(r"[A-Za-z_][\w]*(::[A-Za-z_][\w]*)+", span):
                    last = span.split("::")[-1]
                    if len(last) > 1 and not defined(code, last):
                        problems.append(f"{doc_path}: `{span}`: nothing defines `{last}`")
                elif re.fullmatch(r"[a-z][a-z0-9]*(_[a-z0-9]+)+", span) and span not in ALLOWED:
                    if not re.search(r"\b" + re.escape(span) + r"\b", code):
                        problems.append(f"{doc_path}: `{span}` appears nowhere in the sources")
    return problems


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else os.path.join(os.path.dirname(__file__), "..")
    problems = check(os.path.abspath(root))
    for p in problems:
        print(p)
    if problems:
        print(f"check-docs: {len(problems)} name(s) in the architecture document that the code lacks")
        sys.exit(1)
    print("check-docs: every path and name in docs/architecture.md exists")


if __name__ == "__main__":
    main()
