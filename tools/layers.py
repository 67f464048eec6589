#!/usr/bin/env python3
"""Layers of folders, read from the includes.

Checks every `#include "..."` of the source files (*.c, *.h, *.def) under
each tree the map names: a file may include headers of its own folder or
of a folder below it, never of one above it; and a header of another folder
is named with its folder (`#include "core/srv_reply.h"`, the tree being the
include root), so that an include says which layer it reaches. An include
that names no file of the tree (a system header, common/, proto/, include/)
is not this check's business.

Usage: tools/layers.py [MAP]
  MAP defaults to tools/layers.txt, beside this script. Exits 0 when every
  include keeps to the layers, 1 after listing each one that does not as
  FILE:LINE: #include "..." and why; 2 when the map is wrong.

The map: one line per tree, the tree's path from the repository's root,
a colon, then its folders from the top layer to the bottom:

    # comment
    server: . rpc core data
    lib:

`.` is the tree's own top folder (the files directly in it); left out, it
is above every folder listed. A folder listed is one directly in the tree;
what lies deeper in it belongs to its layer. Every folder of the tree that
holds source files must be listed, and every folder listed must exist: a
folder the map does not know, or one it knows that is gone, is an error,
so that the map cannot fall behind the tree. A tree with no folders (flat,
like lib/ until it is moved into its layers) has nothing to check, and the
script says so.
"""
import re
import sys
from pathlib import Path

SOURCES = (".c", ".h", ".def")
INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def read_map(path: Path):
    trees = []
    for n, line in enumerate(path.read_text().splitlines(), 1):
        line = line.split("#", 1)[0].strip()
        if not line:
            continue
        tree, colon, rest = line.partition(":")
        if not colon or not tree.strip():
            sys.exit(f"{path}:{n}: expected 'TREE: FOLDER ...' (see tools/layers.py -h)")
        folders = rest.split()
        if len(set(folders)) != len(folders):
            sys.exit(f"{path}:{n}: a folder is listed twice")
        trees.append((tree.strip().rstrip("/"), folders, n))
    return trees


def sources(tree: Path):
    return sorted(p for p in tree.rglob("*") if p.is_file() and p.suffix in SOURCES)


def folder_of(tree: Path, f: Path) -> str:
    """The layer a file of the tree is in: its first folder below the tree."""
    parts = f.relative_to(tree).parts
    return parts[0] if len(parts) > 1 else "."


def shown(name: str, folder: str) -> str:
    return f"{name}/ (its top)" if folder == "." else f"{name}/{folder}/"


def check_tree(root: Path, name: str, listed, map_path: Path, map_line: int):
    tree = (root / name).resolve()
    if not tree.is_dir():
        sys.exit(f"{map_path}:{map_line}: {name}/ is not a folder")
    files = sources(tree)
    on_disk = sorted({folder_of(tree, f) for f in files} - {"."})
    if not on_disk and set(listed) <= {"."}:
        print(f"layers: {name}/ is flat (no folders): nothing to check")
        return 0
    unknown = [d for d in on_disk if d not in listed]
    gone = [d for d in listed if d != "." and d not in on_disk]
    if unknown or gone:
        for d in unknown:
            print(f"{map_path}:{map_line}: {name}/{d}/ holds sources but has no layer")
        for d in gone:
            print(f"{map_path}:{map_line}: {name}/{d}/ is listed but holds no source")
        sys.exit(2)
    order = listed if "." in listed else ["."] + listed
    rank = {d: i for i, d in enumerate(order)}
    # Where each header of the tree is, by name, to tell an unqualified
    # include of another folder's header.
    by_name = {}
    for f in files:
        by_name.setdefault(f.name, []).append(f)

    problems = []
    for f in files:
        own = folder_of(tree, f)
        for n, line in enumerate(f.read_text(errors="replace").splitlines(), 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            inc = m.group(1)
            where = f"{f.relative_to(root)}:{n}: #include \"{inc}\""
            # As the compiler looks: beside the including file, then from
            # the tree (the include root).
            target = None
            for base in (f.parent, tree):
                c = (base / inc).resolve()
                if c.is_file() and tree in c.parents:
                    target = c
                    break
            if target is None:
                if "/" not in inc and inc in by_name:
                    dirs = ", ".join(str(p.parent.relative_to(root)) + "/" for p in by_name[inc])
                    problems.append(f"{where}: a header of another folder ({dirs}) "
                                    "named without its folder")
                continue
            to = folder_of(tree, target)
            if rank[to] < rank[own]:
                problems.append(f"{where}: {shown(name, to)} is above {shown(name, own)} "
                                f"(top to bottom: {' '.join(order)})")
            elif to != own and to != "." and "/" not in inc:
                problems.append(f"{where}: a header of {shown(name, to)} named without "
                                "its folder")
    for p in problems:
        print(p)
    print(f"layers: {name}/: {len(files)} files, folders {' > '.join(order)}: "
          f"{len(problems) or 'no'} include{'' if len(problems) == 1 else 's'} out of layer")
    return len(problems)


def main():
    args = sys.argv[1:]
    if args and args[0] in ("-h", "--help"):
        print(__doc__)
        return 0
    root = Path(__file__).resolve().parent.parent
    map_path = Path(args[0]) if args else root / "tools" / "layers.txt"
    if not map_path.is_file():
        sys.exit(f"layers: no map at {map_path}\n{__doc__}")
    problems = 0
    for name, folders, n in read_map(map_path):
        problems += check_tree(root, name, folders, map_path, n)
    return 1 if problems else 0


if __name__ == "__main__":
    sys.exit(main())
