#!/usr/bin/env python3
"""Where the start-up and the decision spend their time, as a table (doc/STARTUP.md).

    test/steps.py RUNS [VAR=VALUE ...] -- PROGRAM [ARGS...]

Runs PROGRAM RUNS times under the steps build (build/test/libtscshim-steps.so, calib/steps.h),
each with the VAR=VALUE settings, and prints one Markdown row per step: what ended it (a
STEP of the shim's, or a system call), the median and quartiles of its time in microseconds
(the counter, less the notes' own time), and the page faults the step took (median over
the processes). Steps are matched by their place in each process's sequence; processes
whose sequence differs from the most common one are counted and left out.
The staged costs of calib/steps.h (TSCTEST_SYSCALL_COST_NS, TSCTEST_FAULT_COST_NS) pass
through as settings; PRELOAD_AFTER=LIBRARY preloads a library after the shim (the
kernel's clock's double, build/test/librefclock.so). --own-record (root): everything runs in a private mount namespace
with a /run of its own, where `tscshim calib --save` first writes the machine-wide record
with the steps build's own costs, at the default path, so that no TSCSHIM_ variable need
be set (a set one makes the load parse the options); --own-record=FILE makes FILE's text the
record instead (a per-user cache a cold start wrote, under the kernel clock's double, say).
--counts prints, instead of the table, one line of totals per
process kind: system calls, page faults and notes, load and decision apart, and how often
the decision read the clocksource's name (three system calls of its own; for tests).
"""
import collections
import os
import statistics
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIBRARY = os.path.join(ROOT, "build", "test", "libtscshim-steps.so")

SYSCALLS = {0: "read", 3: "close", 5: "fstat", 14: "rt_sigprocmask", 28: "madvise", 39: "getpid",
            72: "fcntl", 96: "gettimeofday", 107: "geteuid", 186: "gettid", 200: "tkill",
            228: "clock_gettime", 257: "openat", 262: "newfstatat", 267: "readlinkat",
            280: "utimensat"}


def parse(path):
    processes, current = [], None
    with open(path) as f:
        for line in f:
            line = line.rstrip("\n")
            if line.startswith("process "):
                _, _pid, rate = line.split()
                current = {"rate": float(rate), "steps": []}
            elif line == "end":
                if current is not None:
                    processes.append(current)
                current = None
            elif current is not None:
                name, arg, ticks, faults, reads = line.split("\t")
                current["steps"].append((name, int(arg), int(ticks), int(faults), int(reads)))
    return processes


def label(name, arg):
    if name == "system call":
        return "system call `%s`" % SYSCALLS.get(arg, str(arg))
    if name == "before a system call":
        return "(before `%s`)" % SYSCALLS.get(arg, str(arg))
    return name


def quartiles(values):
    values = sorted(values)
    n = len(values)
    return values[n // 4], statistics.median(values), values[(3 * n) // 4]


def table(processes):
    signatures = collections.Counter(tuple((s[0], s[1]) for s in p["steps"]) for p in processes)
    signature, count = signatures.most_common(1)[0]
    kept = [p for p in processes if tuple((s[0], s[1]) for s in p["steps"]) == signature]
    print("| # | step ended by | us (median) | quartiles | faults | kernel clock reads |")
    print("| ---: | --- | ---: | --- | ---: | ---: |")
    parts = collections.OrderedDict()
    part = "load"
    for i, (name, arg) in enumerate(signature):
        us = [p["steps"][i][2] / p["rate"] / 1000.0 for p in kept]
        faults = [p["steps"][i][3] for p in kept]
        reads = [p["steps"][i][4] for p in kept]
        low, mid, high = quartiles(us)
        print("| %d | %s | %.1f | %.1f-%.1f | %g | %g |" % (i + 1, label(name, arg), mid, low, high,
                                                          statistics.median(faults), statistics.median(reads)))
        if name.startswith("decision: due"):
            part = "decision"
            continue  # the program's own time, between the two
        if name == "decision: done":
            part = "after the decision"
        elif part == "after the decision":
            continue
        totals = parts.setdefault(part, [0.0] * len(kept))
        for k, v in enumerate(us):
            totals[k] += v
    for part, totals in parts.items():
        low, mid, high = quartiles(totals)
        print("| | %s, in all | %.1f | %.1f-%.1f | | |" % (part, mid, low, high))
    print()
    print("%d processes, %d with this sequence of steps" % (len(processes), count))


def counts(processes):
    """One line per process: system calls and faults at load and in the decision."""
    for p in processes:
        part, totals = "load", collections.Counter()
        for name, _arg, _ticks, faults, reads in p["steps"]:
            if name.startswith("decision: due"):
                part = "decision"
                continue  # the program's own time, faults and reads, between the two
            if part == "after":
                continue
            if name == "system call":
                totals[part + "_syscalls"] += 1
            if name == "decision: the clocksource's name read":
                totals["clocksource_reads"] += 1
            totals[part + "_faults"] += faults
            totals[part + "_reads"] += reads
            if name == "decision: done":
                part = "after"
        print(" ".join("%s=%d" % (k, totals[k]) for k in
                       ("load_syscalls", "load_faults", "load_reads", "decision_syscalls", "decision_faults",
                        "decision_reads", "clocksource_reads")))


def in_own_record(argv, text_from=None):
    """Runs this script again in a private mount namespace with a record of its own: the
    one `tscshim calib --save` writes, or text_from's text, as a link that calib would make."""
    if text_from:
        save = ('mkdir -m 755 /run/tscshim && python3 -c "import os, sys; '
                'os.symlink(open(sys.argv[1]).read(), \'/run/tscshim/calibration\')" "$3"')
    else:
        save = 'TSCSHIM_LIBRARY="$1" "$2" calib --save --calibrate-us 100000 >/dev/null 2>&1'
    script = 'mount -t tmpfs -o mode=0755 tmpfs /run && ' + save + ' && shift 3 && exec python3 "$@"'
    cmd = ["unshare", "-m", "--propagation", "private", "sh", "-c", script, "_", LIBRARY,
           os.path.join(ROOT, "build", "tscshim"), os.path.abspath(text_from or "/"),
           os.path.abspath(__file__)] + argv
    return subprocess.run(cmd, check=False).returncode


def main(argv):
    own = [a for a in argv if a == "--own-record" or a.startswith("--own-record=")]
    if own:
        rest = [a for a in argv if a not in own]
        return in_own_record(rest, own[0].split("=", 1)[1] if "=" in own[0] else None)
    only_counts = "--counts" in argv
    argv = [a for a in argv if a != "--counts"]
    if "--" not in argv or len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    split = argv.index("--")
    runs, settings, program = int(argv[0]), argv[1:split], argv[split + 1:]
    with tempfile.TemporaryDirectory() as tmp:
        notes = os.path.join(tmp, "notes")
        env = dict(os.environ)
        env["LD_PRELOAD"] = LIBRARY
        for s in settings:
            k, v = s.split("=", 1)
            if k == "PRELOAD_AFTER":  # a library preloaded after the shim (a test double)
                env["LD_PRELOAD"] = LIBRARY + " " + v
            else:
                env[k] = v
        env["TSCTEST_STEPS_FILE"] = notes
        for _ in range(runs):
            subprocess.run(program, env=env, stdout=subprocess.DEVNULL, check=False)
        if not os.path.exists(notes):
            sys.stderr.write("steps.py: no notes were written (is %s built?)\n" % LIBRARY)
            return 1
        processes = parse(notes)
    if not processes:
        sys.stderr.write("steps.py: no process finished its notes\n")
        return 1
    if only_counts:
        counts(processes)
    else:
        table(processes)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
