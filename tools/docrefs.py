#!/usr/bin/env python3
"""Names in the docs that the code must have.

A doc that names a function, a file or an option that does not exist sends
its reader looking for nothing (issue 49 found `momento_dispatch()`, a
`loop.c` and stale walks in docs/architecture.md). This reads the docs and
the comments of the code and checks three kinds of name against the tree:

- files: a path under one of the project's folders (`lib/engine/call.c`,
  `tests/proxy/`) must exist; a bare `name.c` / `name.h` must exist
  somewhere in the tree (docs and code comments alike);
- functions: a `name()` in a doc, and every `momento_*` identifier, must be
  defined or declared somewhere in the sources (C, Python, shell);
- options: a `--long-option` in a doc must appear in some source, script
  or build file (the programs' option tables, the scripts that pass it).

What the project names but does not own (another program's files and
options, Momento's SDK functions) is listed in ALLOWED below, each with
its reason. Build outputs (`build/...`) and placeholders (NAME, FILE, *,
...) are not checked. CHANGELOG.md and docs/performance.md record what was
true when written and are left out: their names are history.

Usage: tools/docrefs.py [--fail]   (from the repository's top)
  prints each name that does not exist, with where it is named; with
  --fail exits 1 when there is any.
"""
import os
import re
import subprocess
import sys

DOCS_SKIP = {"CHANGELOG.md", "docs/performance.md"}
TOP = ("lib", "server", "proxy", "apps", "examples", "tests", "tools", "bench", "docs",
       "include", "common", "fuzz", "proto", "valgrind", ".ci")
SRC_EXT = (".c", ".h", ".py", ".sh", ".def", ".build", ".txt", ".yaml", ".js", ".json", ".supp",
           ".in", ".proto")

# Names the project mentions and does not own, with why.
ALLOWED = {
    # memcached's own sources, cited where the proxy copies its rules
    "proto_bin.c", "proto_text.c", "util.c", "protocol_binary.h",
    # protobuf-c's, cited where momento-local matches its behaviour
    "protobuf-c.c",
    # the reader's own program in the docs' build lines
    "app.c",
    # made by fuzz/run.sh when a fuzzer finds a crash (not in git)
    "fuzz/findings/",
    # meson's option, in the README's install line
    "--prefix",
}

PLACEHOLDER = re.compile(r"[A-Z]{2,}|\*|\.\.\.|<|>|\{|\}|\$|%|&|node_modules")


def git_files():
    out = subprocess.run(["git", "ls-files", "-z"], capture_output=True, check=True).stdout
    files = [f for f in out.decode().split("\0") if f and "node_modules/" not in f]
    # Files not yet committed count too (a check run before the commit).
    out = subprocess.run(["git", "ls-files", "-z", "--others", "--exclude-standard"],
                         capture_output=True, check=True).stdout
    files += [f for f in out.decode().split("\0") if f and "node_modules/" not in f]
    return [f for f in files if os.path.exists(f)]


def main():
    fail = "--fail" in sys.argv[1:]
    files = git_files()
    paths = set(files)
    dirs = set()
    for f in files:
        d = os.path.dirname(f)
        while d:
            dirs.add(d)
            d = os.path.dirname(d)
    basenames = {os.path.basename(f) for f in files}
    sources = [f for f in files if f.endswith(SRC_EXT) or "/" not in f and not f.endswith(".md")
               or f.startswith(".ci/") or f.endswith("meson.build")]
    text = {}
    for f in sources:
        if f == "tools/docrefs.py":
            continue  # its own docstring names what must not count
        try:
            with open(f, encoding="utf-8", errors="replace") as fh:
                text[f] = fh.read()
        except OSError:
            pass
    words = set()
    for t in text.values():
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", t))
    # Defined or declared: the name followed by "(" somewhere in a source
    # that is not a comment-only mention is too fine to tell by regex; a
    # function that exists appears as an identifier in some source.
    options = set()
    for t in text.values():
        options.update(re.findall(r"--[a-z][a-z0-9-]*[a-z0-9]", t))

    docs = [f for f in files if f.endswith(".md") and f not in DOCS_SKIP]
    missing = []

    def exists(q, near):
        """q names a file or folder of the tree, a program built from one
        (bench/mc_load: bench/mc_load.c), or a header without its .h; in a
        code comment also relative to the commenting file's folders."""
        bases = [""]
        d = os.path.dirname(near)
        while d:
            bases.append(d + "/")
            d = os.path.dirname(d)
        for b in bases:
            for ext in ("", ".c", ".h", ".sh", ".py"):
                if b + q + ext in paths or b + q + ext in dirs:
                    return True
        return False

    def check_path(p, where, near=""):
        p = p.rstrip(".,:;)")
        if not p or PLACEHOLDER.search(p) or p.startswith("build") or p in ALLOWED:
            return
        first = p.split("/")[0]
        if "/" in p and first in TOP:
            if not exists(p.rstrip("/"), near):
                missing.append((where, "file", p))
        elif "/" in p and re.fullmatch(r"[A-Za-z0-9_./+-]+\.[ch]", p):
            # core/calls.c: named from its tree's root (server/, lib/,
            # proxy/, ...), as the includes name it
            system = os.path.exists("/usr/include/" + p) or os.path.exists(
                "/usr/include/x86_64-linux-gnu/" + p)
            if not any(f.endswith("/" + p) for f in paths) and not system:
                missing.append((where, "file", p))
        elif "/" not in p and re.fullmatch(r"[A-Za-z0-9_.+-]+\.[ch]", p):
            system = os.path.exists("/usr/include/" + p) or any(
                os.path.exists(os.path.join("/usr/include", d, p))
                for d in ("x86_64-linux-gnu", "grpc", "openssl", "google"))
            if p not in basenames and not system:
                missing.append((where, "file", p))

    path_re = re.compile(r"(?<![\w./-])((?:%s)/[A-Za-z0-9_./+-]*|[A-Za-z0-9_+-]+(?:/[A-Za-z0-9_+-]+)*\.[ch])(?![\w/])"
                         % "|".join(re.escape(t) for t in TOP))
    for f in docs:
        with open(f, encoding="utf-8") as fh:
            lines = fh.read().split("\n")
        in_code = False
        for n, line in enumerate(lines, 1):
            where = "%s:%d" % (f, n)
            if line.lstrip().startswith("```"):
                in_code = not in_code
            for m in path_re.finditer(line):
                if line[m.end():m.end() + 1] in ("&", "<", "{", "*", "N"):
                    continue  # lib/ops/op_&lt;family&gt;.c: a pattern, not a name
                check_path(m.group(1), where)
            for m in re.finditer(r"`([A-Za-z_][A-Za-z0-9_]*)\(\)", line):
                name = m.group(1)
                # `_get_fields()`: the previous name's family, shortened
                if name not in words and name not in ALLOWED and not name.startswith("_"):
                    missing.append((where, "function", name + "()"))
            for m in re.finditer(r"(?<![\w-])(momento_[a-z0-9_]+|momento__[a-z0-9_]+)", line):
                name = m.group(1)
                if name not in words and name.rstrip("_") not in words and not name.endswith("_"):
                    missing.append((where, "function", name))
            for m in re.finditer(r"(?<![\w-])(--[a-z][a-z0-9-]*[a-z0-9])", line):
                opt = m.group(1)
                if opt not in options and opt not in ALLOWED:
                    missing.append((where, "option", opt))

    # Comments in the code: the files they name.
    comment_re = re.compile(r"/\*.*?\*/|//[^\n]*", re.S)
    for f, t in text.items():
        if not f.endswith((".c", ".h")) or f.startswith(("tests/interop", "fuzz/corpus")):
            continue
        for cm in comment_re.finditer(t):
            n = t.count("\n", 0, cm.start()) + 1
            for m in path_re.finditer(cm.group(0)):
                check_path(m.group(1), "%s:%d" % (f, n + cm.group(0).count("\n", 0, m.start())), f)

    seen = set()
    for where, kind, name in missing:
        if (where, name.rstrip("()")) in seen:
            continue  # `momento_x()`: one name, found by two rules
        seen.add((where, name.rstrip("()")))
        print("%s: no such %s: %s" % (where, kind, name))
    print("docrefs: %d docs and the code's comments read, %d names that do not exist"
          % (len(docs), len(seen)))
    return 1 if fail and seen else 0


if __name__ == "__main__":
    sys.exit(main())
