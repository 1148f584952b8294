#!/usr/bin/env python3
"""The manual against the code and against itself.

    docs_check.py SOURCE_DIR

Checks, each printing one line per failure and failing the test:
  1. every name the log schema table of common/ gives (the /steps columns and /ranks phases of
     common/log_schema.h, the interruption causes, and the fields of the /events and
     /interruptions rows of common/log_schema.c) appears, as `name`, in docs/log.md;
  2. every relative markdown link of README.md and docs/*.md names a file that exists;
  3. README.md is at most 350 lines: the front door, with the manual in docs/.
Standard library only.
"""
import glob
import os
import re
import sys

README_MAX_LINES = 350


def schema_names(src):
    """(kind, name) pairs of the schema table, in its order."""
    with open(os.path.join(src, "common", "log_schema.h"), encoding="utf-8") as f:
        h = f.read()
    with open(os.path.join(src, "common", "log_schema.c"), encoding="utf-8") as f:
        c = f.read()
    names = []

    def x_macro(macro, kind):
        m = re.search(r"#define\s+" + macro + r"\(X\)", h)
        if not m:
            raise SystemExit(f"docs_check: no {macro}(X) in common/log_schema.h")
        # the macro's body runs over lines ending in a backslash
        body = []
        for line in h[m.start():].split("\n"):
            body.append(line)
            if not line.rstrip().endswith("\\"):
                break
        found = re.findall(r"\bX\(\s*([A-Za-z_][A-Za-z0-9_]*)\s*,", "\n".join(body))
        if not found:
            raise SystemExit(f"docs_check: {macro}(X) names nothing")
        names.extend((kind, n) for n in found)

    x_macro("AF_STEP_COLUMNS", "/steps column")
    x_macro("AF_PHASES", "/ranks phase")
    x_macro("AF_INTR_CAUSES", "interruption cause")
    for fn, kind in (("af_log_event_type", "/events field"),
                     ("af_log_intr_type", "/interruptions field")):
        m = re.search(fn + r"\(void\)\s*\{(.*?)\n\}", c, re.S)
        if not m:
            raise SystemExit(f"docs_check: no {fn} in common/log_schema.c")
        found = re.findall(r'H5Tinsert\([^,]+,\s*"([^"]+)"', m.group(1))
        if not found:
            raise SystemExit(f"docs_check: {fn} inserts no field")
        names.extend((kind, n) for n in found)
    return names


def check_schema(src):
    bad = 0
    path = os.path.join(src, "docs", "log.md")
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read()
    except OSError as e:
        print(f"docs/log.md: cannot read: {e.strerror}")
        return 1, 0
    quoted = set(re.findall(r"`([^`\n]+)`", text))
    words = set()
    for q in quoted:
        words.update(re.findall(r"[A-Za-z_][A-Za-z0-9_]*", q))
    names = schema_names(src)
    for kind, name in names:
        if name not in words:
            print(f"docs/log.md: the {kind} `{name}` of common/log_schema is not documented")
            bad += 1
    return bad, len(names)


LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)(?:\s+\"[^\"]*\")?\)")


def check_links(src):
    bad = 0
    files = [os.path.join(src, "README.md")] + sorted(glob.glob(os.path.join(src, "docs", "*.md")))
    for path in files:
        rel = os.path.relpath(path, src)
        with open(path, encoding="utf-8") as f:
            lines = f.read().split("\n")
        fence = False
        for lineno, line in enumerate(lines, 1):
            if line.lstrip().startswith("```"):
                fence = not fence
                continue
            if fence:
                continue
            for target in LINK.findall(line):
                if re.match(r"^[a-z][a-z0-9+.-]*:", target) or target.startswith("#"):
                    continue  # a URL, or an anchor of the same page
                file_part = target.split("#", 1)[0]
                full = os.path.normpath(os.path.join(os.path.dirname(path), file_part))
                if not os.path.exists(full):
                    print(f"{rel}:{lineno}: the link target {target} does not exist")
                    bad += 1
    return bad


def check_readme_length(src):
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        n = sum(1 for _ in f)
    if n > README_MAX_LINES:
        print(f"README.md: {n} lines, more than {README_MAX_LINES}: move the details into docs/")
        return 1
    return 0


def main():
    if len(sys.argv) != 2:
        print("usage: docs_check.py SOURCE_DIR", file=sys.stderr)
        return 2
    src = sys.argv[1]
    bad_schema, n_names = check_schema(src)
    bad = bad_schema + check_links(src) + check_readme_length(src)
    if bad:
        print(f"docs_check: {bad} problem(s)")
        return 1
    print(f"docs_check: docs/log.md names all {n_names} schema names; every link resolves; "
          "README.md within its length")
    return 0


if __name__ == "__main__":
    sys.exit(main())
