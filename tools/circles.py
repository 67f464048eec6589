#!/usr/bin/env python3
"""Circles of files, read from the objects' symbols.

For each object file of a built library (the library's own `*.p/` folder
that meson makes), the symbols it defines and the ones it uses; file A
depends on file B when A uses a symbol B defines. Files that depend on each
other, directly or around a longer loop, form a circle (a strongly
connected component of more than one file): each can be understood, tested
or replaced only with all the others.

Usage: tools/circles.py BUILD_DIR [--fail]
  prints each circle of lib/ (libmomento), server/ (momento-local) and
  proxy/ (momento-proxy's protocols and connections) with
  the symbols that close it; with --fail exits 1 when there is any.
"""
import subprocess
import sys
from pathlib import Path


def objects(build: Path, pattern: str):
    dirs = sorted(build.glob(pattern))
    if not dirs:
        sys.exit(f"circles: nothing matches {build / pattern}: build first")
    return sorted(dirs[0].glob("*.o"))


def symbols(obj: Path):
    out = subprocess.run(["nm", "-P", str(obj)], check=True, capture_output=True,
                         text=True).stdout
    defined, used = set(), set()
    for line in out.splitlines():
        parts = line.split()
        if len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        if kind == "U":
            used.add(name)
        elif kind in "TDBRCGSVW":
            defined.add(name)
    return defined, used


ROOT = Path(__file__).resolve().parent.parent


def source_name(obj: Path, srcdir: str) -> str:
    """The source path (from the library's folder) of a meson object.

    meson flattens a source's path into its object's name, `/` becoming
    `_`: ../lib/client.c -> client.c.o, server/rpc/rpc_kv.c -> rpc_rpc_kv.c.o
    (older trees: lib_client.c.o). The `_` that stood for a `/` is the one
    that names a file that exists."""
    name = obj.name[:-2]
    for prefix in ("lib_", "server_", "common_"):
        if name.startswith(prefix) and not (ROOT / srcdir / name).exists():
            name = name[len(prefix):]
    parts = name.split("_")
    for i in range(1, len(parts)):
        cand = "/".join(["_".join(parts[:i]), "_".join(parts[i:])])
        if (ROOT / srcdir / cand).exists():
            return cand
    return name


def graph(objs, srcdir):
    owner, uses = {}, {}
    for o in objs:
        d, u = symbols(o)
        f = source_name(o, srcdir)
        uses[f] = u
        for s in d:
            owner[s] = f
    edges = {f: {} for f in uses}
    for f, u in uses.items():
        for s in u:
            g = owner.get(s)
            if g and g != f:
                edges[f].setdefault(g, []).append(s)
    return edges


def circles(edges):
    """Tarjan's strongly connected components of more than one file."""
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges[v]:
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
    for v in sorted(edges):
        if v not in index:
            visit(v)
    return out


def main():
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    build = Path(sys.argv[1])
    fail = "--fail" in sys.argv[2:]
    found = 0
    for label, srcdir, pattern in (("libmomento", "lib", "lib/libmomento.so.*.p"),
                                   ("momento-local", "server", "server/libmomento-local.a.p"),
                                   ("momento-proxy", "proxy", "proxy/libpx-proto.a.p")):
        edges = graph(objects(build, pattern), srcdir)
        cs = circles(edges)
        if not cs:
            print(f"{label}: no circle among {len(edges)} files")
        for c in cs:
            found += 1
            print(f"{label}: a circle of {len(c)} files: {' '.join(c)}")
            for a in c:
                for b in c:
                    if b in edges[a]:
                        syms = sorted(edges[a][b])
                        more = f" (+{len(syms) - 3})" if len(syms) > 3 else ""
                        print(f"    {a} -> {b}: {', '.join(syms[:3])}{more}")
    return 1 if fail and found else 0


if __name__ == "__main__":
    sys.exit(main())
