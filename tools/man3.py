#!/usr/bin/env python3
"""Section 3 man pages from the public headers' comments: one source for
the reference (meson runs this at build time; docs/api.md "Man pages").

A header is read as a sequence of comments, exported declarations
(MOMENTO_EXPORT ...;) and other code. The comment right before a run of
declarations documents them: they make one page, named after the first,
and every other name of the run gets a page that includes it (.so), so
`man momento_set_if_absent_sync` finds its group. A comment followed by
another comment is a note for the section it is in (up to the next
`/* ---- name */` line): it goes on every page of that section, as the
async calls' return codes do. The header's opening comment holds the
rules of every function in it (ownership, threads), which each page
refers to and libmomento(3) gives in full.

Each page has NAME, SYNOPSIS, DESCRIPTION, RETURN VALUE, THREADS, EXAMPLE
(where docs/man/examples/NAME.c exists: compiled by the tests) and SEE ALSO.

Usage: man3.py OUTDIR VERSION EXAMPLES_DIR HEADER...
Writes OUTDIR/*.3 and libmomento.3. A relative OUTDIR is taken under
$MESON_INSTALL_DESTDIR_PREFIX when that is set (meson install runs this)."""
import os
import re
import sys


def roff(text):
    text = text.replace("\\", "\\e").replace("-", "\\-")
    out = []
    for line in text.split("\n"):
        if line.startswith((".", "'")):
            line = "\\&" + line
        out.append(line)
    return "\n".join(out)


def comment_text(c):
    """The text of a /* */ comment, its leading stars and indent removed."""
    body = c[2:-2]
    lines = body.split("\n")
    out = []
    for l in lines:
        l = re.sub(r"^\s*\* ?", "", l) if re.match(r"^\s*\*", l) else l.strip()
        out.append(l.rstrip())
    while out and not out[0].strip():
        out.pop(0)
    while out and not out[-1].strip():
        out.pop()
    return "\n".join(out)


def items(src):
    """(kind, text) for each comment, export and other statement."""
    # C++ guards: their braces would read as one statement.
    src = re.sub(r'(?m)^\s*extern "C" \{\s*$|^\}\s*$', "", src)
    pos = 0
    out = []
    pat = re.compile(r"/\*.*?\*/|MOMENTO_EXPORT\b[^;]*;|#[^\n]*|[^;{}/#]*(\{[^}]*\})?[^;{}/#]*;|\S",
                     re.S)
    ws = re.compile(r"\s*")
    while True:
        pos = ws.match(src, pos).end()
        m = pat.match(src, pos)
        if not m:
            break
        t = m.group(0)
        pos = m.end()
        if t.startswith("/*"):
            out.append(("comment", t))
        elif t.startswith("MOMENTO_EXPORT"):
            out.append(("export", t))
        elif t.strip():
            out.append(("code", t))
    return out


def decl_name(d):
    m = re.search(r"\b(momento_\w+)\s*\(", d)
    return m.group(1) if m else None


def prototype(d):
    d = re.sub(r"^MOMENTO_EXPORT\s+", "", d.strip())
    return re.sub(r"\s+", " ", d).replace("( ", "(").replace(" )", ")")


def first_sentence(text):
    """The comment's first sentence: up to a full stop that ends a word and
    is followed by a capital (not "1..255", "e.g.", "momento.h")."""
    t = " ".join(text.split())
    m = re.match(r"(.+?[a-z)\]`'\"])\.(\s+(?=[A-Z(`*])|$)", t)
    s = m.group(1) if m else t.rstrip(".")
    if len(s) > 110:
        s = s[:107].rsplit(" ", 1)[0] + "..."
    return s


def units(text):
    """The comment as paragraphs and list items, each one line."""
    out, cur = [], []
    for line in text.split("\n"):
        m = re.match(r"^\s*[-*] (.*)$", line)
        if not line.strip() or m:
            if cur:
                out.append(" ".join(cur))
            cur = [m.group(1)] if m else []
        else:
            cur.append(line.strip())
    if cur:
        out.append(" ".join(cur))
    return out


def wrap_prototype(p, width=78):
    """A prototype over several lines, its arguments aligned after "("."""
    if len(p) <= width:
        return [p]
    head, args = p.split("(", 1)
    args = args.rsplit(")", 1)[0].split(", ")
    lines, cur = [], head + "("
    indent = " " * len(cur)
    for i, a in enumerate(args):
        piece = a + (", " if i < len(args) - 1 else ");")
        if len(cur) + len(piece.rstrip()) > width and cur.strip() != (head + "(").strip():
            lines.append(cur.rstrip())
            cur = indent
        cur += piece
    lines.append(cur.rstrip())
    return lines


def paragraphs(text):
    """roff for comment text: blank lines part paragraphs, lines starting
    with '-' are list items, lines indented four or more spaces are code."""
    out = []
    mode = None
    for line in text.split("\n"):
        if not line.strip():
            if mode == "code":
                out.append(".fi")
            mode = None
            continue
        if re.match(r"^\s{4,}\S", line) and mode in (None, "code"):
            if mode != "code":
                out += [".PP", ".nf"]
                mode = "code"
            out.append(roff(line[4:]))
            continue
        if mode == "code":
            out.append(".fi")
            mode = None
        m = re.match(r"^\s*[-*] (.*)$", line)
        if m:
            out += [".IP \\(bu 2", roff(m.group(1))]
            mode = "list"
            continue
        if mode is None:
            out.append(".PP")
            mode = "text"
        out.append(roff(line.strip()))
    if mode == "code":
        out.append(".fi")
    return out


def sentences_about(text, words):
    parts = []
    for u in units(text):
        parts += re.split(r"(?<=[a-z)\]`'\"][.])\s+(?=[A-Z(`*])", u)
    return [p for p in parts if any(re.search(w, p) for w in words)]


def parse(path):
    src = open(path).read()
    header = "momento/" + os.path.relpath(path, os.path.join(os.path.dirname(path), "..")) \
        .replace("momento/", "", 1) if "/momento/" in path else os.path.basename(path)
    header = path[path.index("momento/"):] if "momento/" in path else os.path.basename(path)
    its = items(src)
    intro = comment_text(its[0][1]) if its and its[0][0] == "comment" else ""
    groups = []
    section, notes, pending = "", [], []
    prev = None
    for kind, t in its[1:] if intro else its:
        if kind == "comment":
            m = re.match(r"/\*\s*-{4,}\s*(.*?)\s*\*/", t)
            if m:
                section, notes, pending = m.group(1), [], []
                prev = "comment"
                continue
            if prev == "comment" and pending:
                notes = notes + pending  # a comment followed by a comment
            pending = [comment_text(t)]
            prev = "comment"
        elif kind == "export":
            name = decl_name(t)
            if not name:
                continue
            if prev == "export" and groups:
                groups[-1]["decls"].append((name, prototype(t)))
            else:
                groups.append({"header": header, "section": section, "notes": list(notes),
                               "doc": pending[-1] if pending else "",
                               "decls": [(name, prototype(t))]})
                pending = []
            prev = "export"
        else:
            # A comment before a #define or typedef and then a function
            # documents them together (momento_preset and
            # momento_config_new_preset): it stays pending.
            prev = "code"
    return intro, groups


RETURN_DEFAULT = {
    "int": "0 (MOMENTO_OK) on success, or a negative momento_error; "
           "momento_strerror(3) describes it and momento_refusal_reason(3) says what "
           "was wrong with a refused argument.",
    "void": "None.",
}


def page(g, version, intro_of, examples, all_groups):
    name = g["decls"][0][0]
    names = [n for n, _ in g["decls"]]
    doc = g["doc"] or (g["notes"][-1] if g["notes"] else "")
    out = [f'.TH {name.upper()} 3 "" "libmomento {version}" "libmomento manual"',
           ".SH NAME", roff(", ".join(names)) + " \\- " + roff(first_sentence(doc) if doc else name),
           ".SH SYNOPSIS", ".nf", roff(f"#include <{g['header']}>"), ""]
    for _, p in g["decls"]:
        out += [roff(l) for l in wrap_prototype(p)]
    out += [".fi", ".SH DESCRIPTION"]
    out += paragraphs(doc) if doc else [".PP", "See the header " + roff(g["header"]) + "."]
    returning = [n for n in g["notes"] if n != doc and re.search(r"\breturns?\b", n)]
    for n in g["notes"]:
        if n != doc and n not in returning:
            out += [".SS " + roff(first_sentence(n)[:60])] + paragraphs(n)
    if g.get("sync_doc"):
        out += [".SS The blocking form"] + paragraphs(g["sync_doc"])
    # RETURN VALUE: what the comments say about it, then the type's rule.
    out.append(".SH RETURN VALUE")
    said = sentences_about(doc, [r"\bReturns?\b", r"\breturns?\b", r"MOMENTO_ERR_\w+", r"MOMENTO_OK"])
    for s in dict.fromkeys(said):
        out += [".PP", roff(s)]
    for n in returning:
        out += paragraphs(n)
        said.append(n)
    rtypes = {re.sub(r"\s*\bmomento_\w+\s*\(.*$", "", p).strip() for _, p in g["decls"]}
    for rt in sorted(rtypes):
        if rt in RETURN_DEFAULT and (rt != "int" or not said):
            out += [".PP", roff(RETURN_DEFAULT[rt])]
        elif rt not in RETURN_DEFAULT and not said:
            out += [".PP", roff(f"A {rt}, as the description says.")]
    if any("momento_callback cb" in p for _, p in g["decls"]):
        out += [".PP", roff("An async call that returns MOMENTO_OK calls `cb` exactly once, with "
                            "the result (success, error, timeout, cancellation or the client's "
                            "free alike); any other return means the request was refused, nothing "
                            "was sent and `cb` is never called.")]
    if any("momento_result **ret" in p for _, p in g["decls"]):
        out += [".PP", roff("A blocking call sets *ret to a result the caller frees with "
                            "momento_result_free(3), a refusal's too (its message says why); "
                            "*ret is NULL only for a NULL client, MOMENTO_ERR_WOULD_DEADLOCK "
                            "(called from a callback of the same client) or no memory.")]
    out.append(".SH THREADS")
    threads = sentences_about(doc, [r"[Tt]hread", r"\block", r"concurrent"])
    for n in g["notes"]:
        threads += sentences_about(n, [r"[Tt]hread"])
    for s in dict.fromkeys(threads):
        out += [".PP", roff(s)]
    intro_threads = [u for u in units(intro_of.get(g["header"], "")) if re.search(r"[Tt]hread", u)]
    if not threads:
        for u in intro_threads:
            out += [".PP", roff(u)]
    out += [".PP", roff("libmomento(3) has the rules every function of " + g["header"] +
                        " follows.")]
    ex = next((examples[n] for n in names if n in examples), None)
    if ex:
        out += [".SH EXAMPLE", ".nf"] + [roff(l) for l in ex.rstrip("\n").split("\n")] + [".fi"]
    same = [x["decls"][0][0] for x in all_groups
            if x is not g and x["header"] == g["header"] and x["section"] == g["section"]]
    see = ["libmomento(3)"] + [s + "(3)" for s in same[:8]]
    out += [".SH SEE ALSO", roff(", ".join(see))]
    return "\n".join(out) + "\n"


def overview(intros, version, groups):
    out = [f'.TH LIBMOMENTO 3 "" "libmomento {version}" "libmomento manual"', ".SH NAME",
           "libmomento \\- a C client for the Momento serverless cache", ".SH SYNOPSIS", ".nf",
           "#include <momento/momento.h>", "", "cc app.c $(pkg\\-config \\-\\-cflags \\-\\-libs momento)",
           ".fi", ".SH DESCRIPTION"]
    for h in sorted(intros):
        if intros[h]:
            out += [".SS " + roff(h)] + paragraphs(intros[h])
    out += [".SH FUNCTIONS"]
    for h in sorted({g["header"] for g in groups}):
        out += [".SS " + roff(h), ".PP", roff(", ".join(g["decls"][0][0] + "(3)"
                                                       for g in groups if g["header"] == h))]
    out += [".SH SEE ALSO", "load\\-gen(1), request\\-coalescing(1), momento\\-local(1)"]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) < 5:
        print(__doc__, file=sys.stderr)
        return 2
    outdir, version, exdir, headers = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
    prefix = os.environ.get("MESON_INSTALL_DESTDIR_PREFIX")
    if prefix and not os.path.isabs(outdir):
        outdir = os.path.join(prefix, outdir)
    examples = {}
    if os.path.isdir(exdir):
        for f in sorted(os.listdir(exdir)):
            if f.endswith(".c"):
                examples[f[:-2]] = open(os.path.join(exdir, f)).read()
    intros, groups = {}, []
    for h in headers:
        intro, gs = parse(h)
        if gs:
            intros[gs[0]["header"]] = intro
        groups += gs
    # An async call and its blocking form share a page, as curl's and
    # nghttp2's do: each X_sync joins X's group (with the comment of the
    # blocking section it came from), whatever group the header put it in.
    by_name = {g["decls"][0][0]: g for g in groups}
    for g in groups:
        kept = []
        for n, p in g["decls"]:
            a = by_name.get(n[:-5]) if n.endswith("_sync") else None
            if a is not None and a is not g:
                a.setdefault("sync", []).append((n, p))
                a.setdefault("sync_doc", g["doc"])
            else:
                kept.append((n, p))
        g["decls"] = kept
    groups = [g for g in groups if g["decls"]]
    for g in groups:
        g["decls"] += g.pop("sync", [])
    os.makedirs(outdir, exist_ok=True)
    names = []
    for g in groups:
        first = g["decls"][0][0]
        with open(os.path.join(outdir, first + ".3"), "w") as f:
            f.write(page(g, version, intros, examples, groups))
        names.append(first)
        for n, _ in g["decls"][1:]:
            with open(os.path.join(outdir, n + ".3"), "w") as f:
                f.write(f".so man3/{first}.3\n")
            names.append(n)
    with open(os.path.join(outdir, "libmomento.3"), "w") as f:
        f.write(overview(intros, version, groups))
    if not os.environ.get("MESON_INSTALL_QUIET"):
        print(f"man3.py: {len(names)} pages in {outdir}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
