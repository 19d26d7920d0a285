#!/usr/bin/env python3
"""Static stack use of the shim's load and first-read paths, from gcc's call graph
(-fcallgraph-info=su).

Compiles calib/ and shim/ as the Makefile does into a temporary directory, reads the .ci
call graphs, and finds the deepest chain from the constructor (shim_load, which decides on
a cold start) and from each entry point (the first read of a served clock decides on a
warm start, on whatever stack the caller has: a thread's, a signal's). Our own frames
are exact; calls into libc count 0 and are listed, so the figure is what the shim adds on
top of what libc itself needs. The forked estimator child (estimate_child.c: child) runs in
another process and is reported on its own. Exit 1 if the host's path exceeds the limit.

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

def resolve(name):
    """A bare external name -> the defined global node of that name, if we define it."""
    return name if name in nodes else name if ":" in name else name

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
        d, c, e = deepest(resolve(callee), stack + (name,), skip)
        external |= e
        if d > best:
            best, chain = d, c
    memo[key] = (own + best, [f"{short(name)} {own}"] + chain, external)
    return memo[key]

host = 0
for root_name in ("shim_load", "clock_gettime", "gettimeofday", "timespec_get", "tscshim_status", "tscshim_status_sized"):
    start = next(n for n in nodes if short(n) == root_name)
    depth, chain, external = deepest(start, skip=("child",))
    host = max(host, depth)
    print(f"{root_name} (host process): {depth} bytes, limit {limit}")
    print("  deepest chain: " + " -> ".join(chain))
print("  libc and indirect calls (not counted): " + ", ".join(sorted(short(e) for e in external)))
child_start = next(n for n in nodes if short(n) == "child")
child_depth, child_chain, _ = deepest(child_start)
print(f"estimator child (forked, from measure_in_child): {child_depth} bytes more")
print("  deepest chain: " + " -> ".join(child_chain))
sys.exit(0 if host <= limit else 1)
