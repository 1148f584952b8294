#!/usr/bin/env python3
"""The layering of agefence's parts, checked on the sources and on the built objects.

    layers.py SOURCE_DIR BUILD_DIR

Parts and what each may use (docs/contributing.md, "Layout"):
    common    (result codes, allocator, clock, order statistics, reproducible sums, log schema
              and reader): nothing
    fabric    common                  kernels   common
    sim       fabric, kernels, common (the driver)
    bench     sim, fabric, kernels, common (the benchmarks of `agefence bench`)
    analysis  common
    sim/driver/main.c, the program's entry point, may call bench/ too.
Sub-folders of sim/ and what each may use (docs/contributing.md, "Inside sim/"):
    io        (configuration, log, metrics, launch checks, backend choice, stop): io
    fleet     (aging, event queue, job-level interruptions, stragglers): fleet, io
    oracle    (the serial fault-free reference): oracle, io
    plan      (the shard, placement, the coordinator): plan, fleet, io
    exchange  (the halo): exchange, plan, fleet, io
    recovery  (moves, replicas, twins, retries, detectors' state): recovery, exchange, plan,
              fleet, oracle, io
    driver    (the run, the step, health, throttling, the step log, memory): all of them
Checks, each printing one line per violation and failing the test:
  1. every #include "..." of a part's files resolves to a file of a part it may use;
  2. every agefence symbol an object file needs (nm -u) is defined by an object of a part it
     may use, so a call across layers fails even where a header was side-stepped;
  3. sim/'s objects call each other without a cycle (run -> step -> health -> steplog, ...), so
     no two files call each other: a cycle is reported with its members;
  4. only fabric/ calls MPI, and only kernels/*.cu and fabric/fabric_nccl.c call CUDA or NCCL;
  5. within kernels/, the workload table (workloads.c) and the CPU backend (kernels_cpu.c) use
     no symbol the other defines (nm -u of one against nm -g --defined-only of the other): the
     host arithmetic both need lies below both (arith_cpu.c, the af_*.h headers);
  6. within sim/, checks 1 and 2 again for the sub-folders' rules above (an include, or a symbol
     an object needs, of a sub-folder the file's own may not use);
  7. no source file of a part (tests/ and fuzz/ aside) is over 900 lines unless the comment it
     opens with says why, in the words "Longer than".
Before the checks, a self-test plants an include across the sub-folders' rules and a cycle in a
throw-away tree and fails unless both are reported.
"""
import os
import re
import subprocess
import sys

ALLOWED = {
    "common": {"common"},
    "fabric": {"fabric", "common"},
    "kernels": {"kernels", "common"},
    "sim": {"sim", "fabric", "kernels", "common"},
    "bench": {"bench", "sim", "fabric", "kernels", "common"},
    "analysis": {"analysis", "common"},
    # sim/driver/main.c, the entry point of `agefence run|config|bench`, sits above both.
    "main": {"main", "bench", "sim", "fabric", "kernels", "common"},
}
PARTS = set(ALLOWED) - {"main"}
SIM_ALLOWED = {
    "io": {"io"},
    "fleet": {"fleet", "io"},
    "oracle": {"oracle", "io"},
    "plan": {"plan", "fleet", "io"},
    "exchange": {"exchange", "plan", "fleet", "io"},
    "recovery": {"recovery", "exchange", "plan", "fleet", "oracle", "io"},
    "driver": {"driver", "recovery", "exchange", "plan", "oracle", "fleet", "io"},
}
ENTRY = os.path.join("sim", "driver", "main.c")


def part_of(path, src):
    rel = os.path.relpath(os.path.realpath(path), os.path.realpath(src))
    top = rel.split(os.sep)[0]
    return top if top in PARTS else None


def sim_sub(source):
    """The sub-folder of sim/ a source path (relative to the source tree) is in, or None; the
    generated sources (the embedded scenario, the version) count as io."""
    parts = source.split(os.sep)
    if parts[0] == "gen":
        return "io"
    if parts[0] == "sim" and len(parts) > 2 and parts[1] in SIM_ALLOWED:
        return parts[1]
    return None


INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"')


def sources(src, folder):
    """(path relative to src, path) of every C, header and CUDA file under src/folder, sorted."""
    top = os.path.join(src, folder)
    found = []
    for d, _, fs in os.walk(top):
        for f in fs:
            if f.endswith((".c", ".h", ".cu")):
                path = os.path.join(d, f)
                found.append((os.path.relpath(path, src), path))
    return sorted(found)


def includes(src, path):
    """(line number, name as written, file it names) of every #include "..." of path that names a
    file of the tree: beside path, or from the tree's top; generated and system headers skipped."""
    with open(path, encoding="utf-8") as f:
        for lineno, line in enumerate(f, 1):
            m = INCLUDE.match(line)
            if not m:
                continue
            target = os.path.normpath(os.path.join(os.path.dirname(path), m.group(1)))
            if not os.path.exists(target):
                target = os.path.normpath(os.path.join(src, m.group(1)))
            if os.path.exists(target):
                yield lineno, m.group(1), target


def check_sim_includes(src, out):
    """Check 6 on the sources: every #include "..." of sim/SUB/ names a sub-folder SUB may use."""
    bad = 0
    for rel, path in sources(src, "sim"):
        who = sim_sub(rel)
        if who is None:
            continue
        for lineno, name, target in includes(src, path):
            sub = sim_sub(os.path.relpath(os.path.realpath(target), os.path.realpath(src)))
            if sub is not None and sub not in SIM_ALLOWED[who]:
                print(f"{rel}:{lineno}: includes {name} (sim/{sub}/), but sim/{who}/ "
                      f"may use only {', '.join(sorted(SIM_ALLOWED[who]))}", file=out)
                bad += 1
    return bad


MAX_LINES = 900


def check_lengths(src, out):
    """Check 7: a part's file over MAX_LINES lines says why in the comment it opens with."""
    bad = 0
    for part in sorted(PARTS):
        for rel, path in sources(src, part):
            with open(path, encoding="utf-8") as fh:
                text = fh.read()
            lines = text.count("\n")
            if lines <= MAX_LINES:
                continue
            head = text.lstrip()
            opening = head[:head.find("*/")] if head.startswith("/*") else ""
            if "Longer than" not in opening:
                print(f"{rel}: {lines} lines, over {MAX_LINES}, and its opening comment does not "
                      f"say why (\"Longer than ...\")", file=out)
                bad += 1
    return bad


def check_includes(src, out):
    bad = 0
    for part in sorted(PARTS):
        for rel, path in sources(src, part):
            who = "main" if rel == ENTRY else part
            for lineno, name, target in includes(src, path):
                tp = part_of(target, src)
                if tp is not None and tp not in ALLOWED[who]:
                    print(f"{rel}:{lineno}: includes {name} ({tp}/), but {part}/ "
                          f"may use only {', '.join(sorted(ALLOWED[who]))}", file=out)
                    bad += 1
    return bad


def nm(obj, *flags):
    res = subprocess.run(["nm", *flags, obj], capture_output=True, text=True, check=True)
    syms = []
    for line in res.stdout.splitlines():
        fields = line.split()
        if len(fields) >= 2:
            syms.append((fields[-2], fields[-1]))
    return syms


def objects(build, src):
    """(object path, part, source name) of every object of agefence's libraries and programs."""
    found = []
    cmf = os.path.join(build, "CMakeFiles")
    for target in ("af_common", "af_fabric", "af_kernels", "af_sim", "af_analysis", "agefence_core",
                   "agefence",
                   "agefence-report"):
        tdir = os.path.join(cmf, target + ".dir")
        for root, _, files in os.walk(tdir):
            for f in files:
                if not f.endswith(".o"):
                    continue
                rel = os.path.relpath(os.path.join(root, f), tdir)
                source = rel[:-2]  # sim/driver/run.c.o -> sim/driver/run.c
                top = source.split(os.sep)[0]
                if source == ENTRY:
                    part = "main"
                elif top == "gen":
                    part = "sim"  # the embedded scenario and the version belong to the driver
                elif top in PARTS:
                    part = top
                else:
                    continue
                if top != "gen" and not os.path.exists(os.path.join(src, source)):
                    continue  # left behind by a source file that has moved or gone
                found.append((os.path.join(root, f), part, source))
    return found


def check_objects(build, src, out):
    objs = objects(build, src)
    if not objs:
        print(f"no object files under {build}/CMakeFiles: build agefence first", file=out)
        return 1
    defined = {}
    for path, part, source in objs:
        for kind, sym in nm(path, "--defined-only"):
            if kind.isupper() and kind not in "U":
                defined.setdefault(sym, (part, source))
    bad = 0
    edges = {}
    mpi = re.compile(r"^P?MPI_")
    cuda = re.compile(r"^(cuda|nccl|__cuda)")
    for path, part, source in objs:
        for kind, sym in nm(path, "-u"):
            if mpi.match(sym) and part != "fabric":
                print(f"{source}: calls {sym}: only fabric/ talks MPI", file=out)
                bad += 1
            if cuda.match(sym) and not (source.endswith(".cu") or source == "fabric/fabric_nccl.c"):
                print(f"{source}: calls {sym}: only kernels/*.cu and fabric/fabric_nccl.c use CUDA "
                      f"or NCCL", file=out)
                bad += 1
            if sym not in defined:
                continue
            dpart, dsource = defined[sym]
            if dpart not in ALLOWED[part]:
                print(f"{source}: uses {sym} of {dsource}, but {part}/ may use only "
                      f"{', '.join(sorted(ALLOWED[part]))}", file=out)
                bad += 1
            if part == dpart == "sim" and dsource != source:
                edges.setdefault(source, set()).add(dsource)
                who, sub = sim_sub(source), sim_sub(dsource)
                if who is not None and sub is not None and sub not in SIM_ALLOWED[who]:
                    print(f"{source}: uses {sym} of {dsource}, but sim/{who}/ may use only "
                          f"{', '.join(sorted(SIM_ALLOWED[who]))}", file=out)
                    bad += 1
    bad += report_cycles(edges, out)
    return bad


KERNEL_PAIR = (os.path.join("kernels", "workloads.c"), os.path.join("kernels", "kernels_cpu.c"))


def check_kernel_pair(build, src, out):
    """Check 5: neither of the workload table and the CPU backend calls the other."""
    objs = {source: path for path, _, source in objects(build, src) if source in KERNEL_PAIR}
    missing = [source for source in KERNEL_PAIR if source not in objs]
    if missing:
        print(f"no object of {', '.join(missing)} under {build}/CMakeFiles: build agefence first",
              file=out)
        return 1
    defined = {source: {sym for kind, sym in nm(path, "-g", "--defined-only") if kind != "U"}
               for source, path in objs.items()}
    bad = 0
    for user, other in (KERNEL_PAIR, KERNEL_PAIR[::-1]):
        for _, sym in nm(objs[user], "-u"):
            if sym in defined[other]:
                print(f"{user}: uses {sym} of {other}: the workload table and the CPU backend "
                      f"share arithmetic below both (kernels/arith_cpu.c), not each other's",
                      file=out)
                bad += 1
    return bad


def report_cycles(edges, out):
    """Tarjan's strongly connected components of the driver's call graph; each of more than one
    object is a cycle."""
    index, low, stack, on, comps = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(edges.get(v, ())):
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
            comps.append(comp)

    nodes = set(edges) | {w for ws in edges.values() for w in ws}
    for v in sorted(nodes):
        if v not in index:
            visit(v)
    bad = 0
    for comp in comps:
        if len(comp) > 1:
            print(f"sim objects call each other in a cycle: {' <-> '.join(sorted(comp))}",
                  file=out)
            bad += 1
    return bad


def self_test():
    """Plants a violation of each kind the sub-folder checks look for; returns the number the
    checks missed (0 when both were reported)."""
    import io
    import tempfile
    missed = 0
    with tempfile.TemporaryDirectory() as top:
        for sub in ("exchange", "driver"):
            os.makedirs(os.path.join(top, "sim", sub))
        with open(os.path.join(top, "sim", "driver", "run_internal.h"), "w") as f:
            f.write("/* the driver's state */\n")
        with open(os.path.join(top, "sim", "exchange", "halo.c"), "w") as f:
            f.write('#include "../driver/run_internal.h"\n')
        buf = io.StringIO()
        if check_sim_includes(top, buf) != 1 or "sim/exchange/ may use only" not in buf.getvalue():
            print("self-test: an include of sim/driver/ from sim/exchange/ was not reported")
            missed += 1
    buf = io.StringIO()
    a, b = os.path.join("sim", "driver", "a.c"), os.path.join("sim", "driver", "b.c")
    if report_cycles({a: {b}, b: {a}}, buf) != 1 or "<->" not in buf.getvalue():
        print("self-test: two files that call each other were not reported")
        missed += 1
    return missed


def main():
    if len(sys.argv) != 3:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    src, build = sys.argv[1], sys.argv[2]
    if self_test():
        print("FAIL: the layering checks' self-test")
        return 1
    bad = (check_includes(src, sys.stdout) + check_objects(build, src, sys.stdout) +
           check_kernel_pair(build, src, sys.stdout) + check_sim_includes(src, sys.stdout) +
           check_lengths(src, sys.stdout))
    if bad:
        print(f"FAIL: {bad} layering violation(s)")
        return 1
    print("PASS: includes and object dependencies follow common <- fabric, kernels <- sim; "
          "common <- analysis; within sim/, io <- fleet, oracle <- plan <- exchange <- recovery <- "
          "driver; no cycle among sim's objects; the workload table and the CPU backend do not "
          "call each other; no file over 900 lines without a reason at its top")
    return 0


if __name__ == "__main__":
    sys.setrecursionlimit(10000)
    sys.exit(main())
