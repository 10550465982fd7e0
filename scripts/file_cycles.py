#!/usr/bin/env python3
"""No two source files of a folder call each other, even by a detour.

usage: scripts/file_cycles.py BUILD_DIR FOLDER...   (e.g. build runtime lang cli)

Reads the symbols of the built objects (nm): file A depends on file B
when A uses a symbol B defines. Prints each circle (a strongly connected
set of two or more files) that lies within one of the FOLDERs, with the
symbols that close it, and exits 1 when there is one. Objects under tests/
are left out. Standard library only.
"""
import collections
import glob
import os
import subprocess
import sys


def source_of(obj):
    # BUILD/CMakeFiles/<target>.dir/runtime/start.c.o -> runtime/start.c
    rel = obj.split("/CMakeFiles/", 1)[1].split("/", 1)[1]
    return rel[:-2] if rel.endswith(".o") else rel


def symbols(build):
    objs = [o for o in sorted(glob.glob(os.path.join(build, "CMakeFiles", "**", "*.o"), recursive=True))
            if not source_of(o).startswith("tests/")]
    defs, uses = {}, collections.defaultdict(set)
    if not objs:
        return defs, uses
    # one nm for all: "OBJ:VALUE TYPE NAME" or "OBJ: U NAME" (-A names the file)
    out = subprocess.run(["nm", "-A"] + objs, capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        obj, _, rest = line.partition(".o:")
        src, f = source_of(obj + ".o"), rest.split()
        if len(f) == 3 and f[1] in "TDBR":
            defs.setdefault(f[2], src)
        elif len(f) == 2 and f[0] == "U":
            uses[src].add(f[1])
    return defs, uses


def circles(graph):
    """Strongly connected sets of two or more nodes (Tarjan, iterative)."""
    index, low, on, stack, out, n = {}, {}, set(), [], [], 0
    for root in list(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = n
        n += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = n
                    n += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                elif w in on:
                    low[v] = min(low[v], index[w])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return out


def main(argv):
    if len(argv) < 3:
        sys.stderr.write(__doc__)
        return 2
    build, folders = argv[1], set(argv[2:])
    defs, uses = symbols(build)
    if not uses:
        sys.stderr.write("file_cycles: no objects under %s/CMakeFiles\n" % build)
        return 2
    graph = collections.defaultdict(set)
    for src in uses:
        for sym in uses[src]:
            d = defs.get(sym)
            if d and d != src and os.path.dirname(d) == os.path.dirname(src) \
                    and os.path.dirname(src) in folders:
                graph[src].add(d)
    found = circles(graph)
    for comp in found:
        print("circle: " + " ".join(comp))
        members = set(comp)
        for a in comp:
            for sym in sorted(uses[a]):
                if defs.get(sym) in members and defs[sym] != a:
                    print("  %s -> %s (%s)" % (a, defs[sym], sym))
    if not found:
        print("no circle between files in: " + " ".join(sorted(folders)))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
