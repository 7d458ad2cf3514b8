#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/tree_shape.py ROOT: checks the shape of the source tree at ROOT (outside tests/
and bench/) and prints one line per problem; exit status 1 when there is any.

- No circle in the include graph. A module is a file without its extension (foo.c and foo.h
  are one), and a private header foo_internal.h belongs to the module foo: a circle means two
  modules each need the other, which is what keeps a part from being built, fuzzed or read
  alone.
- Private headers have one suffix, _internal.h.
- The session engine (session/) and the programs built on it (serve/, oci/) never include
  the bulkhead command's own headers (cli/): the engine is a library, cli/ holds commands.
- The monotonic clock is read in one place, lib/mono.h.
- A whole file is read one way, lib/io.h's io_read_all() or io_read_path() (bounded, with
  one error for "too large"): no fread loops of their own.
- In serve/, only the HTTP front (http.c, routes.c, accept.c, http_internal.h) sees
  libmicrohttpd: the session table, execs, files and events answer with serve/body.h and
  serve/serve_err.h, whatever carries them."""
import os
import re
import sys

INCLUDE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.M)
PRIVATE_OTHER = re.compile(r'_(int|impl|priv|private)\.h$')
MONO_READ = re.compile(r'clock_gettime\s*\(\s*CLOCK_MONOTONIC\b')
FREAD = re.compile(r'\bfread\s*\(')
MHD_INCLUDE = re.compile(r'^\s*#\s*include\s+<microhttpd\.h>', re.M)
HTTP_FRONT = {os.path.join('serve', f) for f in ('http.c', 'routes.c', 'accept.c',
                                                  'http_internal.h')}


def sources(root):
    for top, dirs, files in os.walk(root):
        rel = os.path.relpath(top, root)
        dirs[:] = [d for d in dirs if not d.startswith('.') and not d.startswith('build') and
                   (rel != '.' or d not in ('tests', 'bench'))]
        for f in files:
            if f.endswith(('.c', '.h')):
                yield os.path.normpath(os.path.join(rel, f))


def module(path):
    m = os.path.splitext(path)[0]
    return m[:-len('_internal')] if m.endswith('_internal') else m


def circles(edges):
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = 0
    for start in sorted(edges):
        if start in index:
            continue
        work = [(start, iter(sorted(edges.get(start, ()))))]
        index[start] = low[start] = counter
        counter += 1
        stack.append(start)
        on.add(start)
        while work:
            v, it = work[-1]
            w = next(it, None)
            if w is not None:
                if w not in index:
                    index[w] = low[w] = counter
                    counter += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(edges.get(w, ())))))
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


def main():
    root = sys.argv[1] if len(sys.argv) > 1 else '.'
    files = sorted(sources(root))
    mods = {module(f) for f in files}
    edges, problems = {}, []
    for f in files:
        with open(os.path.join(root, f), errors='replace') as fh:
            text = fh.read()
        for inc in INCLUDE.findall(text):
            t = module(inc)
            if t in mods and t != module(f):
                edges.setdefault(module(f), set()).add(t)
            if f.split(os.sep)[0] in ('session', 'serve', 'oci') and inc.startswith('cli/'):
                problems.append(f'{f}: includes {inc}: cli/ holds the bulkhead command; '
                                'the session engine is session/')
        if MONO_READ.search(text) and f != os.path.join('lib', 'mono.h'):
            problems.append(f'{f}: reads CLOCK_MONOTONIC itself (lib/mono.h does)')
        if FREAD.search(text):
            problems.append(f'{f}: reads a file with fread (lib/io.h io_read_path does)')
        if f.startswith('serve' + os.sep) and f not in HTTP_FRONT and MHD_INCLUDE.search(text):
            problems.append(f'{f}: includes microhttpd.h (only the HTTP front does)')
        if PRIVATE_OTHER.search(f):
            problems.append(f'{f}: a private header is named *_internal.h')
    for comp in circles(edges):
        problems.append('include circle among: ' + ', '.join(comp))
    for p in problems:
        print(p)
    return 1 if problems else 0


if __name__ == '__main__':
    sys.exit(main())
