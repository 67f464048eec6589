#!/usr/bin/env python3
"""A section 1 man page from a program's --help, so that the page and the
program's own text are one source (meson runs this at build time for each
installed program, tools/meson.build).

The --help layout every program here prints:
    Usage: NAME [OPTION]...
    A sentence or paragraph saying what it does.

    Heading:
      --option ARG   what it does, continued on lines
                     indented to the description column
      plain indented text
    Closing paragraphs, examples indented by two spaces.

Usage: help2man.py PROGRAM OUTPUT.1 [VERSION]
Exits non-zero (and writes nothing) when PROGRAM --help fails or does not
start with a Usage line."""
import re
import subprocess
import sys


def roff(text):
    """Escapes text for roff: backslashes, and a leading dot or quote."""
    text = text.replace("\\", "\\e").replace("-", "\\-")
    if text.startswith((".", "'")):
        text = "\\&" + text
    return text


def convert(help_text, name, version):
    lines = help_text.rstrip("\n").split("\n")
    m = re.match(r"^Usage: (\S+)(.*)$", lines[0])
    if not m:
        raise ValueError("the --help text does not start with 'Usage: NAME'")
    synopsis = m.group(2).strip()
    # The description: the lines after Usage, up to the first blank line.
    i = 1
    desc = []
    while i < len(lines) and lines[i].strip():
        desc.append(lines[i].strip())
        i += 1
    summary = " ".join(desc)
    first = re.split(r"(?<=[.:])\s", summary, maxsplit=1)[0].rstrip(".:")
    out = [
        f'.TH {name.upper()} 1 "" "libmomento {version}" "libmomento tools"',
        ".SH NAME",
        f"{roff(name)} \\- {roff(first[0].lower() + first[1:] if first else name)}",
        ".SH SYNOPSIS",
        f".B {roff(name)}",
    ]
    if synopsis:
        out.append(roff(synopsis))
    out += [".SH DESCRIPTION", roff(summary)]
    option = re.compile(r"^  (-\S.*?)(?:\s{2,}(\S.*))?$")
    # The rest, block by block (blocks are separated by blank lines).
    blocks, cur = [], []
    for line in lines[i:]:
        if line.strip():
            cur.append(line)
        elif cur:
            blocks.append(cur)
            cur = []
    if cur:
        blocks.append(cur)
    for block in blocks:
        head, body = block[0], block[1:]
        headed = re.match(r"^\S.*:$", head) and body and all(b.startswith("  ") for b in body)
        bare = option.match(head) and all(b.startswith("  ") for b in body)
        if headed or bare:
            # Options, under their heading (or OPTIONS): each "  --opt ARG
            # text" an item, its continuation lines (indented further) its
            # text.
            if bare:
                body = block
            out.append(".SS " + (roff(head[:-1]) if headed else "OPTIONS"))
            for line in body:
                m = option.match(line)
                if m:
                    out += [".TP", ".B " + roff(m.group(1).strip())]
                    if m.group(2):
                        out.append(roff(m.group(2)))
                elif line.startswith("    "):
                    out.append(roff(line.strip()))
                else:
                    out += [".IP", roff(line.strip())]
            continue
        # Prose, with indented lines (examples) kept as they are.
        in_text = in_example = False
        for line in block:
            if line.startswith("  "):
                if not in_example:
                    out += [".PP", ".nf"] if not in_text else [".nf"]
                    in_example = True
                # Two spaces mark an example; deeper ones are its own.
                out.append(roff(line[2:].rstrip()))
                continue
            if in_example:
                out.append(".fi")
                in_example = False
                in_text = False
            if not in_text:
                out.append(".PP")
                in_text = True
            out.append(roff(line.strip()))
        if in_example:
            out.append(".fi")
    out += [".SH SEE ALSO", "The documentation in docs/ of libmomento's sources "
            "(examples.md, server.md)."]
    return "\n".join(out) + "\n"


def main():
    if len(sys.argv) not in (3, 4):
        print(__doc__, file=sys.stderr)
        return 2
    prog, output = sys.argv[1], sys.argv[2]
    version = sys.argv[3] if len(sys.argv) == 4 else ""
    p = subprocess.run([prog, "--help"], capture_output=True, text=True, timeout=60)
    if p.returncode != 0:
        print(f"help2man.py: {prog} --help exited {p.returncode}", file=sys.stderr)
        return 1
    name = re.sub(r"^.*/", "", prog)
    try:
        page = convert(p.stdout, name, version)
    except ValueError as e:
        print(f"help2man.py: {prog}: {e}", file=sys.stderr)
        return 1
    with open(output, "w") as f:
        f.write(page)
    return 0


if __name__ == "__main__":
    sys.exit(main())
