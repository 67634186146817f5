#!/usr/bin/env python3
"""Keeps ARCHITECTURE.md true (issue 22): run by ctest as `layout`.

1. Every folder of src/ and passes/ has a row in ARCHITECTURE.md's folder
   table, and every door that table names exists.
2. A file includes another folder's header only if that header is the
   folder's door (the table's last column); public headers
   (include/ppcc/*.h) are everyone's. Private headers stay private.
3. No circle between folders, neither through the includes of doors nor
   through calls: the call graph is read from the build's object files
   (nm: who defines and who uses each symbol), so a circle through the
   public headers shows too. A folder may call its parent folder (a room
   inside src/plan/ uses the plan), never the other way round as well.

Usage: check_layout.py SOURCE_DIR [BUILD_DIR]   (exit 1 listing problems)
"""
import os
import re
import subprocess
import sys
from collections import defaultdict

src_dir = os.path.abspath(sys.argv[1])
build_dir = os.path.abspath(sys.argv[2]) if len(sys.argv) > 2 else None
problems = []
TOP = ('src', 'passes')


def rel(p):
    return os.path.relpath(p, src_dir)


def code_folders():
    out = set()
    for top in TOP:
        for d, _, files in os.walk(os.path.join(src_dir, top)):
            if any(f.endswith(('.c', '.h')) for f in files):
                out.add(rel(d))
    return out


def read_doors():
    """{folder: set(door paths)} from the table rows of ARCHITECTURE.md."""
    path = os.path.join(src_dir, 'ARCHITECTURE.md')
    if not os.path.exists(path):
        problems.append('ARCHITECTURE.md is missing')
        return {}
    doors = {}
    for line in open(path, encoding='utf-8'):
        cells = [c.strip() for c in line.strip().strip('|').split('|')]
        if not line.startswith('|') or len(cells) < 3:
            continue
        m = re.match(r'`((?:src|passes)[^`]*?)/?`', cells[0])
        if not m:
            continue
        folder = m.group(1).rstrip('/')
        doors[folder] = set()
        for d in re.findall(r'`([^`]+)`', cells[-1]):
            if d.startswith('include/'):
                continue  # public: not a folder's own door
            full = os.path.normpath(os.path.join(folder, d)) if '/' not in d or not d.startswith(TOP) else d
            if not os.path.exists(os.path.join(src_dir, full)):
                problems.append(f'ARCHITECTURE.md: door `{d}` of {folder}/ does not exist')
            doors[folder].add(full)
    return doors


def source_files():
    for top in TOP:
        for d, _, files in os.walk(os.path.join(src_dir, top)):
            for f in sorted(files):
                if f.endswith(('.c', '.h')):
                    yield os.path.join(d, f)


def check_includes(doors):
    include_edges = defaultdict(set)
    pat = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
    for path in source_files():
        here = os.path.dirname(rel(path))
        text = open(path, encoding='utf-8', errors='replace').read()
        for inc in pat.findall(text):
            target = os.path.normpath(os.path.join(os.path.dirname(path), inc))
            if not os.path.exists(target):
                continue  # include/ppcc/..., generated, or system
            t = rel(target)
            if not t.startswith(TOP):
                continue
            there = os.path.dirname(t)
            if there == here:
                continue
            if t not in doors.get(there, set()):
                problems.append(f'{rel(path)} includes {t}, a private header of {there}/ '
                                f'(its door: {", ".join(sorted(doors.get(there, ()))) or "none"})')
            include_edges[here].add(there)
    return include_edges


def object_files():
    """(source path relative to src_dir, object path) of the build's objects
    whose source still exists (stale objects of moved files are skipped)."""
    seen = set()
    for d, _, files in os.walk(os.path.join(build_dir, 'CMakeFiles')):
        for f in files:
            if not f.endswith('.c.o'):
                continue
            p = os.path.join(d, f)
            m = re.search(r'\.dir/(.*)\.o$', p)
            if not m or not m.group(1).startswith(TOP):
                continue
            s = m.group(1)
            if s in seen or not os.path.exists(os.path.join(src_dir, s)):
                continue
            seen.add(s)
            yield s, p


def call_edges():
    defs, uses = {}, defaultdict(set)
    for s, obj in object_files():
        out = subprocess.run(['nm', obj], capture_output=True, text=True).stdout
        for line in out.splitlines():
            parts = line.split()
            if len(parts) == 3 and parts[1] in 'TDBRC':
                defs[parts[2]] = s
            elif len(parts) == 2 and parts[0] == 'U':
                uses[s].add(parts[1])
    if not defs:
        problems.append(f'no object files under {build_dir}: build first')
    edges = defaultdict(lambda: defaultdict(set))
    for s, syms in uses.items():
        for sym in syms:
            t = defs.get(sym)
            if t and os.path.dirname(t) != os.path.dirname(s):
                edges[os.path.dirname(s)][os.path.dirname(t)].add(f'{os.path.basename(s)} -> '
                                                                   f'{os.path.basename(t)} ({sym})')
    return edges


def find_cycles(edges, what, why=None):
    """Reports each strongly connected set of folders (Tarjan)."""
    index, low, stack, on, n = {}, {}, [], set(), [0]
    nodes = set(edges) | {t for ts in edges.values() for t in ts}

    def visit(v):
        index[v] = low[v] = n[0]
        n[0] += 1
        stack.append(v)
        on.add(v)
        for w in edges.get(v, ()):
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
            if len(comp) > 1:
                comp.sort()
                detail = ''
                if why:
                    links = [f'{a} -> {b}: ' + '; '.join(sorted(why[a][b])[:3])
                             for a in comp for b in comp if b in why.get(a, {})]
                    detail = '\n    ' + '\n    '.join(links)
                problems.append(f'{what} circle between folders {", ".join(comp)}{detail}')

    sys.setrecursionlimit(10000)
    for v in sorted(nodes):
        if v not in index:
            visit(v)


doors = read_doors()
for folder in sorted(code_folders() - set(doors)):
    problems.append(f'{folder}/ has no row in ARCHITECTURE.md')
find_cycles(check_includes(doors), 'include')
if build_dir:
    calls = call_edges()
    find_cycles({a: set(b) for a, b in calls.items()}, 'call', calls)

for p in problems:
    print('layout: ' + p)
print(f'layout: {len(doors)} folders, {len(problems)} problem(s)')
sys.exit(1 if problems else 0)
