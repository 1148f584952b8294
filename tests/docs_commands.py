#!/usr/bin/env python3
"""The manual's commands against the program, in a fresh clone.

    docs_commands.py SOURCE_DIR BUILD_DIR MPIEXEC WORK_DIR

Reads every command of the ```sh blocks of README.md and docs/*.md (a line, with its
continuation lines) and checks, each printing one line per failure and failing the test:
  1. every command of agefence, agefence-report or scripts/ensemble.sh names options the
     program takes (its --help or usage text), keys that exist (`agefence config --keys`, for
     --set and --grid), a benchmark that exists (`agefence bench --list`), and scenario files
     of the repository (-c configs/...) that are there;
  2. the commands of README.md, docs/running.md, docs/report.md and docs/log.md run as printed
     in a fresh clone (a folder holding only build/, configs/ and scripts/ of the checkout and
     the files the pages write: my.ini from its ```ini block, out/default.h5 from the README's
     command for it), exit 0, and say no "No such file": mpirun stands for the suite's launcher
     at no more than 2 ranks and without --hostfile (the ranks do not change the result); the
     commands that install (scripts/quickstart.sh, scripts/test.sh), submit to Slurm (sbatch;
     tests/slurm.sh runs them) or read a file no page makes (other.h5) are only checked as in 1;
  3. each section of agefence-report's output (its lines in capitals) is named in
     docs/report.md, and the README's report excerpt lists the sections in the program's order.
Standard library only; the runs take some seconds.
"""
import glob
import os
import re
import shlex
import shutil
import subprocess
import sys

# Commands of the pages that 2 does not run, by their first word, and why.
NOT_RUN = {
    "scripts/quickstart.sh": "installs packages (README's quick start; .ci/run runs it)",
    "scripts/test.sh": "installs packages and runs the whole suite",
    "sbatch": "submits to Slurm (tests/slurm.sh)",
}
RUN_PAGES = ("README.md", "docs/running.md", "docs/report.md", "docs/log.md")
# Files a page's command reads that the run pages do not make: such a command is not run.
# ens/ is an ensemble directory (scripts/ensemble.sh, docs/goodput.md; tests/ensemble_report.sh
# runs --grid on one).
NOT_MADE = ("other.h5", "ens/")
MAX_RANKS = 2


def commands(path):
    """(line number, command) of the ```sh blocks of a page: continuation lines joined, comments
    and prompts dropped."""
    out = []
    with open(path, encoding="utf-8") as f:
        lines = f.read().split("\n")
    fence = None
    pending, start = "", 0
    for n, line in enumerate(lines, 1):
        s = line.strip()
        if s.startswith("```"):
            fence = s[3:].strip() if fence is None else None
            continue
        if fence not in ("sh", "bash", "shell"):
            continue
        if not pending:
            start = n
            if not s or s.startswith("#"):
                continue
        if s.endswith("\\"):
            pending += s[:-1] + " "
            continue
        pending += s
        out.append((start, strip_comment(pending)))
        pending = ""
    return out


def strip_comment(cmd):
    """The command without a trailing shell comment (a # after a blank, outside quotes)."""
    quote = None
    for i, ch in enumerate(cmd):
        if quote:
            quote = None if ch == quote else quote
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and i > 0 and cmd[i - 1] in " \t":
            return cmd[:i].rstrip()
    return cmd.strip()


def ini_files(path):
    """{name: text} of the ```ini blocks whose first line is '# NAME'."""
    with open(path, encoding="utf-8") as f:
        text = f.read()
    files = {}
    for block in re.findall(r"```ini\n(.*?)```", text, re.S):
        m = re.match(r"#\s*(\S+\.ini)\s*\n", block)
        if m:
            files[m.group(1)] = block
    return files


def program_words(words):
    """(program, its arguments) of a command: the launcher and its options skipped."""
    if words and words[0] in ("mpirun", "mpiexec", "srun", "scripts/mpirun.sh"):
        for i, w in enumerate(words):
            if w.startswith("build/"):
                return w, words[i + 1:]
        return None, []
    if words:
        return words[0], words[1:]
    return None, []


class Facts:
    """What the built program says about itself."""

    def __init__(self, build):
        agefence = os.path.join(build, "agefence")
        report = os.path.join(build, "agefence-report")
        self.help = {"build/agefence": out([agefence, "--help"]),
                     "build/agefence-report": out([report, "--help"])}
        self.bench_help = out([agefence, "bench", "--list"])
        self.benches = set(re.findall(r"^  ([a-z]+)\s", self.bench_help, re.M))
        self.keys = set()
        section = ""
        for line in out([agefence, "config", "--keys"]).split("\n"):
            m = re.match(r"^\[([a-z_0-9]+)\]", line)
            if m:
                section = m.group(1)
            m = re.match(r"^  ([a-z_0-9]+)\s", line)
            if m and section:
                self.keys.add(f"{section}.{m.group(1)}")


def out(argv):
    p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.stdout


def check_words(where, prog, args, facts, src):
    """The options, keys, benchmarks and scenario files of one command (check 1)."""
    bad = []
    if prog == "build/agefence" and args[:1] == ["bench"]:
        helptext = facts.bench_help
        if len(args) < 2 or args[1] not in facts.benches and args[1] != "--list":
            bad.append(f"{where}: agefence bench {args[1:2]}: no such benchmark")
    elif prog in facts.help:
        helptext = facts.help[prog]
    elif prog == "scripts/ensemble.sh":
        helptext = out([os.path.join(src, "scripts", "ensemble.sh"), "--help"])
    else:
        return bad
    for i, w in enumerate(args):
        opt = w.split("=", 1)[0]
        if opt.startswith("-") and len(opt) > 1 and not re.fullmatch(r"-?[0-9.]+", opt):
            if not re.search(r"(?<![\w-])" + re.escape(opt) + r"(?![\w-])", helptext):
                bad.append(f"{where}: {opt}: not an option of {prog} (its usage does not name it)")
        if w in ("--set", "--grid") and i + 1 < len(args):
            key = args[i + 1].split("=", 1)[0]
            if key not in facts.keys:
                bad.append(f"{where}: {w} {key}: no such key (agefence config --keys)")
        if w == "-c" and i + 1 < len(args) and args[i + 1].startswith("configs/"):
            if not os.path.exists(os.path.join(src, args[i + 1])):
                bad.append(f"{where}: -c {args[i + 1]}: no such file in the repository")
    return bad


def runnable(cmd, mpiexec):
    """The command as the test runs it (mpirun for the suite's launcher, at most MAX_RANKS
    ranks, no --hostfile), or None with why not."""
    words = shlex.split(cmd)
    if not words:
        return None, "empty"
    if words[0] in NOT_RUN:
        return None, NOT_RUN[words[0]]
    for f in NOT_MADE:
        if f in words:
            return None, f"reads {f}, which the run pages do not make"
    if words[0] in ("mpirun", "scripts/mpirun.sh"):
        rest = words[1:]
        launch = [mpiexec] if words[0] == "mpirun" else [words[0]]
        keep = []
        i = 0
        while i < len(rest):
            if rest[i] == "--hostfile":
                i += 2
                continue
            if rest[i] == "-np" and i + 1 < len(rest):
                keep += ["-np", str(min(int(rest[i + 1]), MAX_RANKS))]
                i += 2
                continue
            keep.append(rest[i])
            i += 1
        if words[0] == "mpirun":
            keep = ["-n" if w == "-np" else w for w in keep]
        # the redirections and pipes of the line stay as printed
        return " ".join(shlex.quote(w) if not re.fullmatch(r"[<>|&]+|2>", w) else w
                        for w in launch + keep), None
    return cmd, None


def run_pages(src, build, mpiexec, work, facts):
    """Check 2: the pages' commands in a fresh clone."""
    bad = []
    clone = os.path.join(work, "clone")
    shutil.rmtree(work, ignore_errors=True)
    os.makedirs(clone)
    os.symlink(os.path.abspath(build), os.path.join(clone, "build"))
    for d in ("configs", "scripts"):
        os.symlink(os.path.join(os.path.abspath(src), d), os.path.join(clone, d))
    for name, text in ini_files(os.path.join(src, "README.md")).items():
        with open(os.path.join(clone, name), "w", encoding="utf-8") as f:
            f.write(text)
    # out/default.h5, which the README's report section makes as it says (and quickstart.sh).
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        m = re.search(r"`(scripts/mpirun\.sh -np \d+ build/agefence run -o out/default\.h5)`",
                      f.read())
    if not m:
        bad.append("README.md: no command that makes out/default.h5 (the report's examples read it)")
        return bad, 0
    todo = [("README.md (the report's log)", m.group(1))]
    for page in RUN_PAGES:
        for n, cmd in commands(os.path.join(src, page)):
            todo.append((f"{page}:{n}", cmd))
    ran = 0
    for where, cmd in todo:
        line, why = runnable(cmd, mpiexec)
        if line is None:
            print(f"not run  {where}: {cmd} ({why})")
            continue
        p = subprocess.run(["bash", "-c", line], cwd=clone, stdout=subprocess.PIPE,
                           stderr=subprocess.PIPE, text=True, timeout=240)
        ran += 1
        said = (p.stdout + p.stderr).strip().split("\n")
        # the program's own line first, not a launcher's banner
        said = [x for x in said if x.startswith("agefence")] or said
        if p.returncode != 0:
            bad.append(f"{where}: `{cmd}` exits {p.returncode} in a fresh clone: {said[-1][:300]}")
        elif "No such file" in p.stdout + p.stderr:
            bad.append(f"{where}: `{cmd}` says: " +
                       next(s for s in said if "No such file" in s)[:300])
        else:
            print(f"ran      {where}: {cmd}")
    return bad, ran


def check_sections(src, build, work):
    """Check 3, on the report of out/default.h5 made by check 2."""
    bad = []
    log = os.path.join(work, "clone", "out", "default.h5")
    if not os.path.exists(log):
        return ["no out/default.h5 to read the report's sections from"]
    text = out([os.path.join(build, "agefence-report"), log])
    printed = [s for s in re.findall(r"^([A-Z][A-Z0-9 ]+[A-Z0-9])(?:\s{2,}.*)?$", text, re.M)
               if not s.startswith("INCOMPLETE")]
    with open(os.path.join(src, "docs", "report.md"), encoding="utf-8") as f:
        report_md = f.read()
    for s in printed:
        if s not in report_md:
            bad.append(f"docs/report.md: the report's section {s} is not named")
    with open(os.path.join(src, "README.md"), encoding="utf-8") as f:
        readme = f.read()
    m = re.search(r"```\nagefence run report:.*?```", readme, re.S)
    if not m:
        return bad + ["README.md: no excerpt of the report ('agefence run report: ...')"]
    shown = re.findall(r"^([A-Z][A-Z0-9 ]+[A-Z0-9])(?:\s{2,}.*)?$", m.group(0), re.M)
    if shown != printed[:len(shown)]:
        bad.append(f"README.md: the report's excerpt shows the sections {shown}; the program "
                   f"prints {printed[:len(shown)]} first")
    return bad


def main():
    if len(sys.argv) != 5:
        print("usage: docs_commands.py SOURCE_DIR BUILD_DIR MPIEXEC WORK_DIR", file=sys.stderr)
        return 2
    src, build, mpiexec, work = sys.argv[1:]
    facts = Facts(build)
    bad = []
    pages = ["README.md"] + sorted(os.path.relpath(p, src)
                                   for p in glob.glob(os.path.join(src, "docs", "*.md")))
    n_checked = 0
    for page in pages:
        for n, cmd in commands(os.path.join(src, page)):
            try:
                words = shlex.split(cmd)
            except ValueError as e:
                bad.append(f"{page}:{n}: `{cmd}`: {e}")
                continue
            # what follows a pipe or a redirection belongs to another program or a file
            for i, w in enumerate(words):
                if w in ("|", ">", ">>", "2>", "&&", ";", "<"):
                    words = words[:i]
                    break
            prog, args = program_words(words)
            if prog is not None:
                n_checked += 1
                bad += check_words(f"{page}:{n}", prog, args, facts, src)
    run_bad, ran = run_pages(src, build, mpiexec, work, facts)
    bad += run_bad
    bad += check_sections(src, build, work)
    for b in bad:
        print(b)
    if bad:
        print(f"docs_commands: {len(bad)} problem(s)")
        return 1
    print(f"docs_commands: {n_checked} commands' options, keys and files exist; {ran} commands "
          "run as printed in a fresh clone; the report's sections are documented")
    return 0


if __name__ == "__main__":
    sys.exit(main())
