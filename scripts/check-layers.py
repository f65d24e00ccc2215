#!/usr/bin/env python3
"""The module graph check of `make lint` (ARCHITECTURE.md invariants 1-2).

For every crate of the workspace: the graph of its top-level modules, an edge
A -> B for each `crate::B` path (or `super::B` reaching the crate root) in A's
files outside `#[cfg(test)]` modules and comments. It fails when

- any crate's graph has a cycle (the modules of the cycle are named), or
- in the agent (`server`), a module imports one at its own layer or above:
  LAYERS below gives each top-level module its layer, from `domain` at the
  bottom to `http` at the top; an edge must point to a lower layer;
- inside any module folder (a "room", ARCHITECTURE.md invariant 8) the files
  import a ring of each other. A room's nodes are its `mod.rs` (shown as
  `(mod)`), its files and its sub-folders; an edge is a `crate::a::b`,
  `super::x` or `self::x` path, a path through a child module named in
  `mod.rs`, or a `use` group, resolved to the deepest file it names. The one
  ring allowed is the store's entity files <-> `tx.rs` (a ring that is gone
  once `tx` is left out);
- in the agent's `engine/`, `http/` and `store/`, a function outside tests
  has more than 100 code lines (invariant 9).

Usage: scripts/check-layers.py [-v] [ROOT]   (-v prints every edge)
"""
import os
import re
import sys

# The agent's layers, bottom first (ARCHITECTURE.md §2). Modules on one line
# are peers: they may not import each other.
LAYERS = [
    ["domain"],
    ["store", "telemetry", "policy"],
    ["config", "events"],
    ["llm", "mcp", "a2a", "notify"],
    ["engine"],
    ["http"],
]
RANK = {m: i for i, layer in enumerate(LAYERS) for m in layer}

CRATES = {
    "server": "server/src",
    "app": "app/src",
    "frontend": "frontend/src",
    "mcp-serve": "mcp-serve/src",
    "mcp-filesystem": "mcp-filesystem/src",
    "mcp-resources": "mcp-resources/src",
    "receipts": "receipts/src",
    "test-support": "test-support/src",
}


def strip(text):
    """The text without comments and `#[cfg(test)]` modules."""
    text = re.sub(r"//[^\n]*", "", text)
    out, i = [], 0
    pat = re.compile(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*\{")
    while True:
        m = pat.search(text, i)
        if not m:
            out.append(text[i:])
            break
        out.append(text[i : m.start()])
        j, depth = m.end(), 1
        while depth and j < len(text):
            depth += {"{": 1, "}": -1}.get(text[j], 0)
            j += 1
        i = j
    text = "".join(out)
    return re.sub(r"#\[cfg\(test\)\]\s*(pub(\([^)]*\))?\s+)?mod\s+\w+\s*;", "", text)


def module_of(rel):
    """The top-level module a file belongs to, or None for the crate root."""
    parts = rel.split(os.sep)
    if parts[0] in ("lib.rs", "main.rs") or parts[0] == "bin":
        return None
    return parts[0][:-3] if parts[0].endswith(".rs") else parts[0]


def test_files(src_dir):
    """Files that are `#[cfg(test)] mod name;` modules (e.g. `store/suite.rs`)."""
    out = set()
    decl = re.compile(r"#\[cfg\(test\)\]\s*(?:pub(?:\([^)]*\))?\s+)?mod\s+(\w+)\s*;")
    for d, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            text = open(os.path.join(d, f), encoding="utf-8").read()
            # A module's children live beside mod.rs/lib.rs, else in a folder
            # named after the file.
            here = d if f in ("mod.rs", "lib.rs", "main.rs") else os.path.join(d, f[:-3])
            for name in decl.findall(text):
                out.add(os.path.join(here, name + ".rs"))
                out.add(os.path.join(here, name, "mod.rs"))
    return out


def edges_of(src_dir):
    mods, edges = set(), {}
    skip = test_files(src_dir)
    for d, _, files in os.walk(src_dir):
        for f in files:
            if not f.endswith(".rs"):
                continue
            path = os.path.join(d, f)
            if path in skip:
                continue
            rel = os.path.relpath(path, src_dir)
            mod = module_of(rel)
            if mod is None:
                continue
            mods.add(mod)
            text = strip(open(path, encoding="utf-8").read())
            targets = set(re.findall(r"\bcrate::(\w+)", text))
            for m in re.finditer(r"\bcrate::\{([^;]*?)\}", text, re.S):
                for part in m.group(1).split(","):
                    w = part.strip().split("::")[0].strip()
                    if re.fullmatch(r"\w+", w):
                        targets.add(w)
            # `super::` from a top-level file (src/x.rs, src/x/mod.rs) is the root.
            depth = len(rel.split(os.sep))
            top = depth == 1 or (depth == 2 and f == "mod.rs")
            if top:
                targets |= set(re.findall(r"\bsuper::(\w+)", text))
            for t in targets - {mod, "self", "super"}:
                edges.setdefault(mod, set()).add((t, rel))
    return mods, edges


def cycles(mods, edges):
    graph = {m: {t for t, _ in edges.get(m, ()) if t in mods} for m in mods}
    return rings(graph)


def rings(graph):
    """The strongly connected components of more than one node."""
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph.get(v, ()):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    sys.setrecursionlimit(10000)
    for m in sorted(graph):
        if m not in index:
            visit(m)
    return out


def use_paths(text):
    """Every path a `use` item names, its groups expanded."""
    out = []

    def expand(prefix, tree):
        tree = tree.strip()
        m = re.match(r"^([\w:]*?)(?:::)?\{(.*)\}$", tree, re.S)
        if not m:
            tree = re.sub(r"\s+as\s+\w+$", "", tree)
            out.append(prefix + [x for x in tree.split("::") if x])
            return
        base = prefix + [x for x in m.group(1).split("::") if x]
        depth, cur, parts = 0, "", []
        for ch in m.group(2):
            depth += {"{": 1, "}": -1}.get(ch, 0)
            if ch == "," and depth == 0:
                parts.append(cur)
                cur = ""
            else:
                cur += ch
        parts.append(cur)
        for part in parts:
            if part.strip():
                expand(base, part)

    for m in re.finditer(r"\buse\s+([^;]+);", text):
        expand([], m.group(1))
    return out


def file_graph(src_dir):
    """Each non-test file's module path -> the module paths of the files it
    imports (a path resolves to the deepest file it names)."""
    skip = test_files(src_dir)
    files = {}
    for d, _, fs in os.walk(src_dir):
        for f in fs:
            path = os.path.join(d, f)
            if f.endswith(".rs") and path not in skip:
                parts = os.path.relpath(path, src_dir)[:-3].split(os.sep)
                if parts[-1] in ("mod", "lib", "main"):
                    parts = parts[:-1]
                files[tuple(parts)] = path
    folders = {k[:n] for k in files for n in range(len(k) + 1)}

    def resolve(path):
        for n in range(len(path), 0, -1):
            if tuple(path[:n]) in files:
                return tuple(path[:n])
        return ()

    graph = {}
    for mp, path in files.items():
        text = strip(open(path, encoding="utf-8").read())
        # `pub(in crate::a)` names a visibility, not an import.
        text = re.sub(r"\bpub\s*\(\s*in\s+[^)]*\)", "pub", text)
        paths = use_paths(text)
        paths += [m.group(0).split("::") for m in re.finditer(r"\b(?:crate|super|self)(?:::\w+)+(?![\w:])", text)]
        bare = re.finditer(r"(?<![\w:])(\w+)::(\w+)", text)
        paths += [[m.group(1), m.group(2)] for m in bare if m.group(1) not in ("crate", "super", "self")]
        for p in paths:
            if p[0] == "crate":
                target = p[1:]
            elif p[0] in ("super", "self"):
                base, i = list(mp), 0
                while i < len(p) and p[i] in ("super", "self"):
                    base = base[:-1] if p[i] == "super" else base
                    i += 1
                target = base + p[i:]
            elif tuple(mp) + (p[0],) in folders:
                target = list(mp) + p  # a child module named in mod.rs
            else:
                continue
            r = resolve(target)
            if r and r != mp:
                graph.setdefault(mp, set()).add(r)
    return files, graph


def room_rings(src_dir):
    """(room, ring, edges) for each ring among the files of one folder."""
    files, graph = file_graph(src_dir)
    out = []
    for room in sorted({k[:-1] for k in files if k}):
        if not room:
            continue  # the crate root: the top-level check above

        def node(k):
            if k[: len(room)] != room:
                return None
            return "(mod)" if len(k) == len(room) else k[len(room)]

        g = {}
        for a, ts in graph.items():
            na = node(a)
            for t in ts:
                nt = node(t)
                if na is not None and nt is not None and na != nt:
                    g.setdefault(na, set()).add(nt)
        if room[0] == "store":
            # The entity files <-> tx.rs ring may stay (invariant 8).
            g = {a: ts - {"tx"} for a, ts in g.items() if a != "tx"}
        for ring in rings(g):
            out.append(("/".join(room), ring, {a: sorted(g[a] & set(ring)) for a in ring}))
    return out


def long_functions(src_dir, limit=100):
    """(file, function, code lines) for each function over `limit`."""
    skip = test_files(src_dir)
    out = []
    head = re.compile(r"\s*(?:pub(?:\([^)]*\))?\s+)?(?:const\s+)?(?:async\s+)?(?:unsafe\s+)?fn\s+(\w+)")
    for d, _, fs in os.walk(src_dir):
        for f in fs:
            path = os.path.join(d, f)
            if not f.endswith(".rs") or path in skip:
                continue
            lines = strip(open(path, encoding="utf-8").read()).split("\n")
            i = 0
            while i < len(lines):
                m = head.match(lines[i])
                if not m:
                    i += 1
                    continue
                depth, opened, j, code = 0, False, i, 0
                while j < len(lines):
                    code += bool(lines[j].strip())
                    for ch in lines[j]:
                        if ch in "{}":
                            depth += 1 if ch == "{" else -1
                            opened = True
                    if (opened and depth == 0) or (not opened and lines[j].rstrip().endswith(";")):
                        break
                    j += 1
                if code > limit:
                    out.append((os.path.relpath(path, src_dir), m.group(1), code))
                i = j + 1
    return out


def main():
    args = [a for a in sys.argv[1:] if a != "-v"]
    verbose = "-v" in sys.argv[1:]
    root = args[0] if args else os.path.join(os.path.dirname(__file__), "..")
    failed = False
    for crate, src in CRATES.items():
        src_dir = os.path.join(root, src)
        if not os.path.isdir(src_dir):
            continue
        mods, edges = edges_of(src_dir)
        for c in cycles(mods, edges):
            failed = True
            print(f"{crate}: import cycle among {', '.join(c)}")
            for m in c:
                for t, rel in sorted(edges.get(m, ())):
                    if t in c:
                        print(f"    {m} -> {t}  ({src}/{rel})")
        if crate == "server":
            for m in sorted(mods - set(RANK)):
                failed = True
                print(f"server: module `{m}` has no layer: add it to LAYERS in {__file__}")
            for m, ts in sorted(edges.items()):
                for t, rel in sorted(ts):
                    if m in RANK and t in RANK and RANK[t] >= RANK[m]:
                        failed = True
                        print(
                            f"server: {m} (layer {RANK[m]}) imports {t} (layer {RANK[t]}): "
                            f"a module may import only layers below its own ({src}/{rel})"
                        )
        for room, ring, g in room_rings(src_dir):
            failed = True
            print(f"{crate}: a ring inside {src}/{room}/ among {', '.join(ring)}")
            for a in ring:
                print(f"    {a} -> {', '.join(g[a])}")
        if crate == "server":
            for room in ("engine", "http", "store"):
                for rel, name, n in long_functions(os.path.join(src_dir, room)):
                    failed = True
                    print(f"server: {src}/{room}/{rel}: fn {name} has {n} code lines (at most 100)")
        if verbose:
            for m in sorted(mods):
                ts = sorted({t for t, _ in edges.get(m, ()) if t in mods})
                print(f"{crate}: {m} -> {', '.join(ts) or '-'}")
    if failed:
        sys.exit(1)
    print("module graph: no import cycle in any crate or room; the agent's layers hold; no long function")


if __name__ == "__main__":
    main()
