#!/usr/bin/env python3
"""The module graph check of `make lint` (ARCHITECTURE.md invariants 1-2).

For every crate of the workspace: the graph of its top-level modules, an edge
A -> B for each `crate::B` path (or `super::B` reaching the crate root) in A's
files outside `#[cfg(test)]` modules and comments. It fails when

- any crate's graph has a cycle (the modules of the cycle are named), or
- in the agent (`server`), a module imports one at its own layer or above:
  LAYERS below gives each top-level module its layer, from `domain` at the
  bottom to `http` at the top; an edge must point to a lower layer.

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
    index, low, stack, on, out, n = {}, {}, [], set(), [], [0]

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in graph[v]:
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
    for m in sorted(mods):
        if m not in index:
            visit(m)
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
        if verbose:
            for m in sorted(mods):
                ts = sorted({t for t, _ in edges.get(m, ()) if t in mods})
                print(f"{crate}: {m} -> {', '.join(ts) or '-'}")
    if failed:
        sys.exit(1)
    print("module graph: no import cycle in any crate; the agent's layers hold")


if __name__ == "__main__":
    main()
