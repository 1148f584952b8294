#!/usr/bin/env python3
"""The hand-written man pages against what the binaries print, so the two cannot drift.

    man_pages.py AGEFENCE AGEFENCE_REPORT MAN_DIR

man/agefence.1 must name every command (`agefence run|config|bench`), every option and every
AGEFENCE_* variable of `agefence --help` and `agefence bench --help`, and every benchmark of
`agefence bench --list` (each as an entry of its own: ".B NAME"); man/agefence-report.1 every option and AGEFENCE_* variable of
`agefence-report --help`. Where groff is installed, both pages must also format without a
warning (groff -man -ww). One line per omission; exit 1 if there is any.
"""
import os
import re
import shutil
import subprocess
import sys

OPTION = re.compile(r"(?<![\w./=-])(--?[A-Za-z][\w-]*)")
VARIABLE = re.compile(r"\bAGEFENCE_[A-Z_]+\b")
COMMAND = re.compile(r"^\s*(?:usage:)?\s*agefence (\w+)", re.M)
BENCH = re.compile(r"^  (\w+)\s{2,}\S", re.M)


def output(*cmd):
    res = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if res.returncode != 0:
        sys.exit(f"man_pages: {' '.join(cmd)} exited with status {res.returncode}")
    return res.stdout


def page_text(path):
    """The words of a roff page: comments dropped, escapes undone (\\- is -, fonts go)."""
    lines = []
    with open(path, encoding="utf-8") as f:
        for line in f:
            if line.startswith('.\\"'):
                continue
            lines.append(line)
    text = "".join(lines)
    text = text.replace("\\-", "-").replace("\\&", "").replace("\\e", "\\")
    text = re.sub(r"\\f[BIRP]", "", text)
    return text


def mentions(text, word):
    return re.search(r"(?<![\w-])" + re.escape(word) + r"(?![\w-])", text) is not None


def entry(text, word):
    """A tagged paragraph of its own (".TP" then ".B word"), as each benchmark has."""
    return re.search(r"^\.B " + re.escape(word) + r"\s*$", text, re.M) is not None


def check(page, wanted, text, out, benches=()):
    missing = 0
    for what, source in wanted:
        found = entry(text, what) if what in benches else mentions(text, what)
        if not found:
            print(f"{page}: does not mention {what} ({source} lists it)", file=out)
            missing += 1
    return missing


def main(argv):
    if len(argv) != 4:
        sys.exit("usage: man_pages.py AGEFENCE AGEFENCE_REPORT MAN_DIR")
    agefence, report, man = argv[1:]
    bad = 0

    wanted = []
    helps = [("agefence --help", output(agefence, "--help")),
             ("agefence bench --help", output(agefence, "bench", "--help"))]
    for source, text in helps:
        wanted += [(c, source) for c in COMMAND.findall(text)]
        wanted += [(o, source) for o in OPTION.findall(text)]
        wanted += [(v, source) for v in VARIABLE.findall(text)]
    benches = BENCH.findall(output(agefence, "bench", "--list"))
    if not benches:
        print("man_pages: `agefence bench --list` lists no benchmark", file=sys.stdout)
        bad += 1
    wanted += [(b, "agefence bench --list") for b in benches]
    page = os.path.join(man, "agefence.1")
    bad += check(page, dict.fromkeys(wanted), page_text(page), sys.stdout, set(benches))

    text = output(report, "--help")
    wanted = [(o, "agefence-report --help") for o in OPTION.findall(text)]
    wanted += [(v, "agefence-report --help") for v in VARIABLE.findall(text)]
    page = os.path.join(man, "agefence-report.1")
    bad += check(page, dict.fromkeys(wanted), page_text(page), sys.stdout)

    groff = shutil.which("groff")
    for name in ("agefence.1", "agefence-report.1"):
        page = os.path.join(man, name)
        if groff is None:
            print(f"man_pages: groff not installed: {page} not formatted")
            continue
        res = subprocess.run([groff, "-man", "-ww", "-z", "-Tutf8", page], capture_output=True,
                             text=True, check=False)
        if res.returncode != 0 or res.stderr.strip():
            print(f"{page}: groff -man -ww: {res.stderr.strip() or res.returncode}")
            bad += 1
    if bad:
        print(f"man_pages: {bad} problem(s)")
        return 1
    print("man_pages: both pages name every command, option, benchmark and variable of --help")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
