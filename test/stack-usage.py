#!/usr/bin/env python3
"""Stack use of the shim's load and first-read paths: gcc's call graph for our own
frames, and a run for everything, libc's frames included.

Static (-fcallgraph-info=su): compiles calib/ and shim/ as the Makefile does into a
temporary directory, reads the .ci call graphs, and finds the deepest chain from the
constructor (shim_load) and from each entry point, on the caller's stack. The decision
itself runs on a stack of its own (shim/gate.c), reached through an asm call the graph
does not follow, so the caller's chain ends at run_on_stack: a forced decision's chain is
reported from decide, and a decision at a read's from decide without decision_forced: it
runs on the claim's page, whose room (3904 bytes) it must leave 512 bytes of, for libc's
frames (not counted: calls into libc count 0 here) and for a margin.

Measured (libc's frames included), with build/libtscshim.so and build/test/probe_lazy
(made here if missing):
  - the caller's stack: the read the decision is due at is made in a signal handler on a
    painted alternate stack of 64 KiB, with and without the shim; the bytes changed are
    what the handler used. The shim may add at most 1 KiB to the program's own need.
  - the decision's own stack: TSCSHIM_VERBOSE=2 says how much of it a decision used
    (a warm one at a read, a cold one at load); at most half of it.
Exit 1 if the caller's static chain exceeds the limit, or a measured bound is exceeded.

usage: test/stack-usage.py [LIMIT_BYTES]   (default 4096)
"""
import glob, os, re, subprocess, sys, tempfile

root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
limit = int(sys.argv[1]) if len(sys.argv) > 1 else 4096
cc = os.environ.get("CC", "cc")
flags = ["-std=gnu11", "-fno-math-errno", "-fPIC", "-fvisibility=hidden", "-pthread",
         "-Icalib", "-Iinclude", "-O2", "-g", "-fcallgraph-info=su"]

nodes, edges = {}, {}
with tempfile.TemporaryDirectory() as tmp:
    for src in sorted(glob.glob(os.path.join(root, "calib/*.c")) + glob.glob(os.path.join(root, "shim/*.c"))):
        obj = os.path.join(tmp, os.path.basename(src)[:-2] + ".o")
        subprocess.run([cc, *flags, "-c", src, "-o", obj], cwd=root, check=True)
    for ci in glob.glob(os.path.join(tmp, "*.ci")):
        for line in open(ci):
            m = re.match(r'node: \{ title: "([^"]+)" label: "([^"]*)"', line)
            if m:
                size = re.search(r"\\n(\d+) bytes \(([^)]*)\)", m.group(2))
                if size:
                    nodes[m.group(1)] = (int(size.group(1)), size.group(2))
                continue
            m = re.match(r'edge: \{ sourcename: "([^"]+)" targetname: "([^"]+)"', line)
            if m:
                edges.setdefault(m.group(1), set()).add(m.group(2))

def short(name):
    return name.split(":")[-1]

memo = {}
def deepest(name, stack=(), skip=()):
    if short(name) in skip:
        return 0, [], set()
    if name in stack:
        return 0, [name + " (recursion)"], set()
    if name not in nodes:
        return 0, [], {name}
    key = (name, skip)
    if key in memo:
        return memo[key]
    own = nodes[name][0]
    best, chain, external = 0, [], set()
    for callee in edges.get(name, ()):
        d, c, e = deepest(callee, stack + (name,), skip)
        external |= e
        if d > best:
            best, chain = d, c
    memo[key] = (own + best, [f"{short(name)} {own}"] + chain, external)
    return memo[key]

def node(name):
    return next(n for n in nodes if short(n) == name)

failed = False
host = 0
for root_name in ("shim_load", "clock_gettime", "gettimeofday", "timespec_get", "tscshim_status", "tscshim_status_sized"):
    depth, chain, external = deepest(node(root_name), skip=("child",))
    host = max(host, depth)
    print(f"{root_name} (caller's stack, static): {depth} bytes, limit {limit}")
    print("  deepest chain: " + " -> ".join(chain))
depth, chain, external = deepest(node("decide"), skip=("child",))
print(f"a forced decision (its own stack, static): {depth} bytes")
print("  deepest chain: " + " -> ".join(chain))
print("  libc and indirect calls (not counted): " + ", ".join(sorted(short(e) for e in external)))
room, spare = 3904, 512
memo.clear()
at_read, chain, external = deepest(node("decide"), skip=("child", "decision_forced"))
print(f"a decision at a read (the claim's page, static): {at_read} bytes, limit {room - spare} (the room {room})")
print("  deepest chain: " + " -> ".join(chain))
print("  libc and indirect calls (not counted): " + ", ".join(sorted(short(e) for e in external)))
child_depth, child_chain, _ = deepest(node("child"))
print(f"estimator child (forked, from measure_in_child): {child_depth} bytes more")
print("  deepest chain: " + " -> ".join(child_chain))
failed = host > limit or at_read > room - spare

# ---- measured, libc's frames included ----
shim = os.path.join(root, "build/libtscshim.so")
lazy = os.path.join(root, "build/test/probe_lazy")
subprocess.run(["make", "--no-print-directory", "-s", "build/libtscshim.so", "build/test/probe_lazy"],
               cwd=root, check=True, stdout=subprocess.DEVNULL)
with tempfile.TemporaryDirectory() as tmp:
    base = dict(os.environ, TSCSHIM_SYSTEM_RECORD="off", TSCSHIM_SERVE="always",
                TSCSHIM_CACHE=os.path.join(tmp, "cache"))
    def run(env, *args):
        return subprocess.run([lazy, *args], env=env, capture_output=True, text=True)
    # A cold start at load writes the cache, and says how much of the decision's stack it used.
    cold = run(dict(base, LD_PRELOAD=shim, TSCSHIM_VERBOSE="2"), "none")
    def used(text, pattern):
        m = re.search(pattern, text)
        return int(m.group(1)) if m else None
    size = 65536
    def handler_use(extra):
        r = run(dict(base, TSCSHIM_DECIDE_AFTER="21", PROBE_READS_FIRST="20", **extra), "altstack", str(size), "1063")
        return r, used(r.stdout, r"altstack: used=(\d+)")
    plain, plain_used = handler_use({})
    shimmed, shim_used = handler_use({"LD_PRELOAD": shim, "TSCSHIM_VERBOSE": "2"})
    cold_used = used(cold.stderr, r"decision stack \(a forced decision's\): (\d+) of")
    warm_used = used(shimmed.stderr, r"decision stack \(the claim's page\): (\d+) of")
    if None in (plain_used, shim_used):
        print("measured: the handler's use could not be read:", plain.stdout, shimmed.stdout, shimmed.stderr)
        sys.exit(1)
    added = shim_used - plain_used
    print(f"measured, the caller's stack: the due read in a handler used {shim_used} bytes with the shim, "
          f"{plain_used} without: {added} more (limit 1024)")
    failed = failed or added > 1024
    if cold_used is None or warm_used is None:
        print("measured: TSCSHIM_VERBOSE=2 gave no decision stack figure (a sanitizer build decides on the caller's)")
    else:
        print(f"measured, a decision at a read (from the cache, TSCSHIM_VERBOSE=2), on the claim's page: {warm_used} "
              f"bytes of {room} (limit {room - 256}); at load, measuring, on its own stack: {cold_used} of 65536 "
              f"(limit 32768; the estimator's child is another process)")
        failed = failed or warm_used > room - 256 or cold_used > 32768
sys.exit(1 if failed else 0)
