#!/usr/bin/env python3
"""Sorts libFuzzer findings by whose code they are in (scripts/fuzz.sh).

    fuzz-triage.py HARNESS_BINARY [-LIBFUZZER_FLAG...] ARTIFACT...

Replays each artifact (crash-*, leak-*, timeout-*, oom-*) through the harness, with the flags
given and the caller's ASAN_OPTIONS, and reads the sanitizer's or libFuzzer's report. The finding is agefence's when the first stack frame
that is neither a sanitizer, libFuzzer nor the C library is in agefence's sources (sim/,
analysis/, fabric/, kernels/, fuzz/), HDF5's when it is in libhdf5 (a damaged file that libhdf5
1.10 itself cannot survive: not ours to fix), and "other" otherwise (another library, no stack,
or no longer reproducible). A leak report is agefence's when any of its direct leaks is.
Prints one line per artifact: "agefence|hdf5|other ARTIFACT: FRAME"; exit status 1 when any is
agefence's.
"""
import os
import re
import subprocess
import sys

OURS = re.compile(r"/(sim|analysis|fabric|kernels|fuzz)/[\w.+-]+\.(c|h|cu):\d+")
# "#3 0x... in FUNC LOCATION", or "#3 0x...  (MODULE+0x...)" for a frame without symbols.
FRAME = re.compile(r"^\s*#\d+ 0x[0-9a-f]+ +(?:in (.*) )?(\S+)$")
SKIP_PREFIXES = ("__asan", "__lsan", "__ubsan", "__sanitizer", "__interceptor", "__interception",
                 "fuzzer::", "__libc", "__GI_", "__restore_rt", "_start", "__mem", "__str")
SKIP_NAMES = re.compile(r"^(abort|raise|malloc|calloc|realloc|free|strdup|strndup|mem(cpy|move|set|"
                        r"cmp)|str\w*|printf|vfprintf|fprintf|snprintf|vsnprintf)$")
SKIP_LIBS = ("libc.so", "libc-", "ld-linux", "libstdc++", "libgcc_s", "libm.so", "sysdeps/")


def frame_owner(func, where):
    if OURS.search(where):
        return "agefence"
    if "libhdf5" in where:
        return "hdf5"
    if func.startswith(SKIP_PREFIXES) or SKIP_NAMES.match(func.split("(")[0]) or any(
            lib in where for lib in SKIP_LIBS):
        return None
    # A frame of the harness binary without a source line is the sanitizer/libFuzzer runtime.
    if where.startswith("(") and "/lib" not in where:
        return None
    return "other"


def classify_stack(lines):
    for line in lines:
        m = FRAME.match(re.sub(r" \(BuildId: [0-9a-f]+\)$", "", line))
        if not m:
            continue
        owner = frame_owner(m.group(1) or "", m.group(2))
        if owner is not None:
            return owner, "%s %s" % (m.group(1) or "?", m.group(2))
    return "other", "no attributable stack frame"


def classify(report):
    lines = report.splitlines()
    start = next((i for i, l in enumerate(lines)
                  if "ERROR:" in l or "runtime error:" in l or "agefence fuzz:" in l), None)
    if start is None:
        return "other", "not reproduced (no report when replayed)"
    lines = lines[start:]
    # A UBSan report names its source line first.
    m = re.search(r"^(\S+):\d+:\d+: runtime error: (.*)$", "\n".join(lines), re.M)
    if m and OURS.search(m.group(0)):
        return "agefence", m.group(0)
    if any("LeakSanitizer" in l for l in lines[:2]):
        verdicts = []
        block = None
        for line in lines:
            if line.startswith("Direct leak") or line.startswith("Indirect leak"):
                block = [] if line.startswith("Direct leak") else None
                if block is not None:
                    verdicts.append(block)
            elif block is not None:
                block.append(line)
        results = [classify_stack(b) for b in verdicts]
        for owner, frame in results:
            if owner == "agefence":
                return owner, "leak: " + frame
        if results:
            return results[0][0], "leak: " + results[0][1]
    owner, frame = classify_stack(lines)
    if owner == "agefence":
        return owner, frame
    # A memory error inside a library call is agefence's when the memory is: a buffer that
    # agefence allocated or put on its stack too small for what it asked the library to fill.
    for i, line in enumerate(lines):
        if "allocated by thread" in line or "is located in stack of thread" in line:
            origin, where = classify_stack(lines[i + 1:i + 40])
            if origin == "agefence":
                return origin, "%s, into a buffer of %s" % (frame, where)
            break
    return owner, frame


def main():
    if len(sys.argv) < 2:
        print(__doc__, file=sys.stderr)
        return 2
    binary = sys.argv[1]
    flags = [a for a in sys.argv[2:] if a.startswith("-")]
    artifacts = [a for a in sys.argv[2:] if not a.startswith("-")]
    env = dict(os.environ)
    env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "detect_leaks=1") + ":symbolize=1"
    env["UBSAN_OPTIONS"] = "print_stacktrace=1:halt_on_error=1:symbolize=1"
    ours = 0
    for art in artifacts:
        try:
            out = subprocess.run([binary, "-timeout=20"] + flags + [art], env=env,
                                 stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 timeout=120).stdout.decode("utf-8", "replace")
        except subprocess.TimeoutExpired:
            out = ""
        owner, frame = classify(out)
        ours += owner == "agefence"
        print("%-8s %s: %s" % (owner, art, frame))
        if owner == "agefence":
            with open(art + ".report.txt", "w") as f:
                f.write(out)
    return 1 if ours else 0


if __name__ == "__main__":
    sys.exit(main())
