#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/serve_scope_latency.py: create request -> first byte of a credentialed HTTPS answer in
# the guest, through `bulkhead serve` (bench/serve-scope-latency.sh starts it with a pool of
# 10). Interleaved, each alone measure starting with the pool full (no refill boot beside it):
#   pooled+scope  a create with an inline scope and the vault, then curl through its broker
#   cold+scope    the same with "pool": false
#   pooled        a create without a scope, then `echo` (the pool's own reference)
#   up+scope      the same curl in a session with that scope already up
# Then BURSTS rounds of 10 pooled+scope creates at once (from a full pool of 10) and of 10
# cold+scope creates at once. Prints p50 and p99 (nearest rank) and ratios, and the create
# request's own latency (to the session ready: for a pooled one, the binding) alone.
# Usage: serve_scope_latency.py SOCKET PORT VAULT CA RUNS BURSTS
import json
import os
import statistics
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_api  # noqa: E402
from serve_api import Conn, call  # noqa: E402

SOCK, PORT, VAULT, CA = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
serve_api.use(SOCK)
RUNS, BURSTS = int(sys.argv[5]), int(sys.argv[6])
POOL = 10
SCOPE = {"secrets": [{"name": "api", "inject": {"header": "Authorization", "value": "Bearer {}"},
                      "destinations": [{"scheme": "https", "host": "localhost", "port": PORT,
                                        "path_prefix": "/v1/",
                                        "allow_addresses": ["127.0.0.1"]}]}], "allow": []}
CURL = ["curl", "-sS", "https://localhost:%d/v1/items" % PORT]


def first_byte(sid, cmd, t0, want):
    """Runs cmd in sid; seconds from t0 to its first stdout frame, which must hold want."""
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid, body=json.dumps({"cmd": cmd}))
    r = c.getresponse()
    t, body = None, b""
    for line in r:
        if b'"stdout"' in line:
            if t is None:
                t = time.monotonic() - t0
            body += line
    c.close()
    if t is None or want not in body:
        raise RuntimeError("no answer from %s: %r" % (cmd, body[:200]))
    return t


CREATED = {}  # mode -> seconds from the create request to its answer (the session ready)


def measure(body, cmd, want, mode=None):
    t0 = time.monotonic()
    st, s = call("POST", "/v1/sessions", body)
    if st != 201:
        raise RuntimeError("create: %d %s" % (st, s))
    if mode and (s["pooled"] or "cold" in mode):
        CREATED.setdefault(mode, []).append(time.monotonic() - t0)
    t = first_byte(s["id"], cmd, t0, want)
    call("DELETE", "/v1/sessions/" + s["id"])
    return t, s["pooled"]


def pool_full():
    for _ in range(6000):
        st, p = call("GET", "/v1/pool")
        if p["ready"] >= POOL and p["booting"] == 0:
            return
        time.sleep(0.1)
    raise RuntimeError("the pool did not refill")


def burst(body, n):
    """n creates at once; each one's seconds to its first answer byte (and whether pooled)."""
    out = [None] * n

    def one(i):
        out[i] = measure(body, CURL, b"R0VUIC92MS9pdGVtcw")  # "GET /v1/items", base64
    ts = [threading.Thread(target=one, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if any(o is None for o in out):
        raise RuntimeError("a create of the burst failed")
    return out


def q(xs, p):
    xs = sorted(xs)
    if p == 50:
        return 1000 * statistics.median(xs)
    i = max(1, -(-len(xs) * p // 100))
    return 1000 * xs[i - 1]


def main():
    scoped = {"scope": SCOPE, "vault": VAULT, "ca_file": CA}
    want = b"R0VUIC92MS9pdGVtcw"
    res = {k: [] for k in ("pooled+scope", "cold+scope", "pooled", "up+scope")}
    misses = 0
    pool_full()
    st, up = call("POST", "/v1/sessions", dict(scoped, pool=False))
    first_byte(up["id"], CURL, time.monotonic(), want)  # its first curl is not measured
    for _ in range(RUNS):
        pool_full()
        t, pooled = measure(scoped, CURL, want, "pooled+scope")
        (res["pooled+scope"].append(t) if pooled else None)
        misses += not pooled
        pool_full()
        res["cold+scope"].append(measure(dict(scoped, pool=False), CURL, want, "cold+scope")[0])
        pool_full()
        t, pooled = measure({}, ["echo", "x"], b"eAo", "pooled")
        (res["pooled"].append(t) if pooled else None)
        misses += not pooled
        pool_full()
        res["up+scope"].append(first_byte(up["id"], CURL, time.monotonic(), want))
    call("DELETE", "/v1/sessions/" + up["id"])
    bursts = {"pooled+scope x10": [], "cold+scope x10": []}
    for _ in range(BURSTS):
        pool_full()
        got = burst(scoped, POOL)
        bursts["pooled+scope x10"] += [t for t, pooled in got if pooled]
        misses += sum(not pooled for _, pooled in got)
        pool_full()
        bursts["cold+scope x10"] += [t for t, _ in burst(dict(scoped, pool=False), POOL)]
    print("create request -> first byte of a credentialed HTTPS answer in the guest "
          "(%d interleaved runs alone, %d bursts of %d; p50, p99):" % (RUNS, BURSTS, POOL))
    names = {"pooled+scope": "pooled, with a scope and vault (curl)",
             "cold+scope": "cold, with a scope and vault (curl)",
             "pooled": "reference: pooled without a scope (echo)",
             "up+scope": "reference: the same curl in a session up",
             "pooled+scope x10": "10 at once: pooled, with a scope (curl)",
             "cold+scope x10": "10 at once: cold, with a scope (curl)"}
    for k, xs in list(res.items()) + list(bursts.items()):
        if xs:
            print("  %-44s p50 %8.1f ms   p99 %8.1f ms" % (names[k], q(xs, 50), q(xs, 99)))
    print("create request -> its answer (the session ready; p50, p99):")
    for k in ("pooled+scope", "pooled", "cold+scope"):
        if CREATED.get(k):
            print("  %-44s p50 %8.1f ms   p99 %8.1f ms" % (k, q(CREATED[k], 50), q(CREATED[k], 99)))
    if CREATED.get("pooled+scope") and CREATED.get("pooled"):
        print("ratio (p50): create with a scope / create without, both pooled: %.2f" % (
            q(CREATED["pooled+scope"], 50) / q(CREATED["pooled"], 50)))
    p = q(res["pooled+scope"], 50)
    print("ratios (p50): pooled+scope/pooled %.2f   cold+scope/pooled+scope %.1f   "
          "(pooled+scope - up+scope)/pooled %.2f" % (
              p / q(res["pooled"], 50), q(res["cold+scope"], 50) / p,
              (p - q(res["up+scope"], 50)) / q(res["pooled"], 50)))
    if bursts["pooled+scope x10"]:
        print("ratios (p50, 10 at once): cold/pooled %.1f" % (
            q(bursts["cold+scope x10"], 50) / q(bursts["pooled+scope x10"], 50)))
    if misses:
        print("(%d pooled creates found the pool empty and are left out)" % misses)


main()
