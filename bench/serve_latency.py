#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# bench/serve_latency.py: from a create request to the first byte of a command's output,
# through `bulkhead serve` (bench/serve-latency.sh starts it): a session from the warm pool,
# a cold one, and as references in the same run, interleaved: an exec in a session that is
# already up, and `bulkhead run -- echo` (which boots, runs and stops). Each measure starts
# with the pool full (no refill boot beside it). Prints medians, p90 and ratios.
# Usage: serve_latency.py SOCKET BULKHEAD RUNS
import json
import os
import statistics
import subprocess
import sys
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_api  # noqa: E402
from serve_api import Conn, call  # noqa: E402

SOCK, BULKHEAD, RUNS = sys.argv[1], sys.argv[2], int(sys.argv[3])
serve_api.use(SOCK)


def first_byte(sid, t0):
    """Runs echo in sid; seconds from t0 to its first stdout frame."""
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid, body=json.dumps({"cmd": ["echo", "x"]}))
    r = c.getresponse()
    t = None
    for line in r:
        if b'"stdout"' in line and t is None:
            t = time.monotonic() - t0
    c.close()
    if t is None:
        raise RuntimeError("no output")
    return t


def create_and_first_byte(body):
    t0 = time.monotonic()
    st, s = call("POST", "/v1/sessions", body)
    if st != 201:
        raise RuntimeError("create: %d %s" % (st, s))
    t = first_byte(s["id"], t0)
    call("DELETE", "/v1/sessions/" + s["id"])
    return t, s["pooled"]


def run_first_byte():
    t0 = time.monotonic()
    p = subprocess.Popen([BULKHEAD, "run", "--", "echo", "x"], stdout=subprocess.PIPE)
    p.stdout.read(1)
    t = time.monotonic() - t0
    p.wait()
    return t


def pool_ready():
    for _ in range(3000):
        st, p = call("GET", "/v1/pool")
        if p["ready"] >= 1:
            return
        time.sleep(0.05)
    raise RuntimeError("the pool did not refill")


def main():
    res = {"pool": [], "cold": [], "exec": [], "run": []}
    st, warm = call("POST", "/v1/sessions", {"pool": False})
    misses = 0
    for _ in range(RUNS):
        pool_ready()
        t, pooled = create_and_first_byte({})
        if pooled:
            res["pool"].append(t)
        else:
            misses += 1
        # Each measure starts with the pool full again: no refill boot running beside it.
        pool_ready()
        res["exec"].append(first_byte(warm["id"], time.monotonic()))
        pool_ready()
        res["cold"].append(create_and_first_byte({"pool": False})[0])
        pool_ready()
        res["run"].append(run_first_byte())
    call("DELETE", "/v1/sessions/" + warm["id"])

    def ms(xs, q):
        xs = sorted(xs)
        return 1000 * (statistics.median(xs) if q == 50 else xs[min(len(xs) - 1,
                                                                     int(len(xs) * q / 100))])
    print("create request -> first byte of `echo x`, %d interleaved runs (medians, p90):" % RUNS)
    names = {"pool": "from the pool (POST /v1/sessions, exec)",
             "cold": "cold (pool: false)",
             "exec": "reference: exec in a session already up",
             "run": "reference: bulkhead run -- echo x"}
    for k in ("pool", "cold", "exec", "run"):
        if res[k]:
            print("  %-44s p50 %8.1f ms   p90 %8.1f ms" % (names[k], ms(res[k], 50),
                                                         ms(res[k], 90)))
    if res["pool"]:
        p = ms(res["pool"], 50)
        print("ratios (p50): pool/exec %.2f   pool/cold %.3f   pool/run %.3f   cold/run %.2f"
              % (p / ms(res["exec"], 50), p / ms(res["cold"], 50), p / ms(res["run"], 50),
                 ms(res["cold"], 50) / ms(res["run"], 50)))
    if misses:
        print("(%d pooled creates found the pool empty and are left out)" % misses)


main()
