#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/serve_pool_scope.py: pooled sessions bound to a scope and a broker when they are
# taken (serve/bind.c, session/session_bind.c), for tests/e2e/test_serve_pool_scope.sh. Prints
# "PASS name" or "FAIL name: detail" per check. Usage: serve_pool_scope.py SOCKET GROUP; the
# rest comes from the environment the shell test sets (PORT, VAULT, CA, AUDIT_DIR, RUNDIR,
# SHARED, SECRET_<n>, TMP).
import hashlib
import json
import os
import socket
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import serve_suite  # noqa: E402  (its SOCK is sys.argv[1], as ours)
from serve_suite import call, exec_frames, report  # noqa: E402

E = os.environ
PORT = int(E["PORT"])


def scope_for(n, path):
    """A scope injecting secret api<n> toward https://localhost:PORT<path> only."""
    return {"secrets": [{"name": "api%d" % n,
                         "inject": {"header": "Authorization", "value": "Bearer {}"},
                         "destinations": [{"scheme": "https", "host": "localhost", "port": PORT,
                                           "path_prefix": path,
                                           "allow_addresses": ["127.0.0.1", "::1"]}]}],
            "allow": []}


def digest(scope):
    """The scope's digest as the broker computes it: compact JSON, keys sorted."""
    text = json.dumps(scope, separators=(",", ":"), sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode()).hexdigest()


def create(**kw):
    st, js, raw, _ = call("POST", "/v1/sessions", kw)
    return st, js, raw


def curl(sid, path):
    """curl in the guest through its broker: (status line, output, exit)."""
    out, err, ex, e = exec_frames(sid, ["sh", "-c", "curl -sS -w '\\nstatus=%%{http_code}\\n' "
                                        "https://localhost:%d%s; echo; env; cat /proc/self/environ; "
                                        "grep -rlF tok- / --exclude-dir=proc --exclude-dir=sys "
                                        "2>/dev/null; true" % (PORT, path)])
    return out + err, ex, e


def upstream_saw(path, token):
    with open(E["TMP"] + "/upstream.log", errors="replace") as f:
        text = f.read()
    return ("GET %s" % path) in text and ("Authorization: Bearer %s" % token) in text


def ram_scan(sid, needles):
    """Every needle's count in the guest's RAM: the VM process's large anonymous mappings,
    read through /proc/PID/mem. Returns (counts, bytes read)."""
    rd = os.path.join(E["RUNDIR"], sid)
    sup = int(open(os.path.join(rd, "pid")).read().split()[0])
    vm = None
    for child in open("/proc/%d/task/%d/children" % (sup, sup)).read().split():
        if open("/proc/%s/comm" % child).read().strip() in ("qemu-system-x86", "bulkhead-vmm"):
            vm = int(child)
    counts, total = {n: 0 for n in needles}, 0
    if vm is None:
        return counts, 0
    with open("/proc/%d/maps" % vm) as maps, open("/proc/%d/mem" % vm, "rb", 0) as mem:
        for line in maps:
            f = line.split()
            lo, hi = (int(x, 16) for x in f[0].split("-"))
            if "rw" not in f[1] or hi - lo < (64 << 20):
                continue
            for off in range(lo, hi, 16 << 20):
                mem.seek(off)
                try:
                    chunk = mem.read(min(16 << 20, hi - off) + 64)
                except OSError:
                    continue
                total += len(chunk)
                for n in needles:
                    counts[n] += chunk.count(n.encode())
    return counts, total


def events_for(sid):
    """The kept events of session sid, up to its session.started."""
    c = serve_suite.Conn(timeout=10)
    c.request("GET", "/v1/events?since=0")
    r = c.getresponse()
    seen = []
    for line in r:
        if not line.strip():
            continue
        e = json.loads(line)
        if e.get("session") == sid:
            seen.append(e)
            if e["type"] == "session.started":
                break
    c.close()
    return seen


def group_inject():
    scope = scope_for(0, "/v0/")
    st, s, raw = create(scope=scope, vault=E["VAULT"], ca_file=E["CA"])
    if st != 201:
        report("a pooled create with an inline scope and a vault", False, raw[:300])
        return
    report("a create with a scope and a vault takes a pooled guest", s["pooled"] is True
           and s["pool_miss"] is None and s["broker"] == "private", s)
    out, ex, e = curl(s["id"], "/v0/items")
    report("the guest's first HTTPS request goes out through its bound broker",
           b"status=200" in out and b"GET /v0/items" in out, out[:400])
    report("the upstream sees the vault's token, injected by the bound broker",
           upstream_saw("/v0/items", E["SECRET_0"]), "")
    report("the token is nowhere in the guest's output, environment or files",
           E["SECRET_0"].encode() not in out, out[:300])
    counts, total = ram_scan(s["id"], [E["SECRET_0"], "GET /v0/items"])
    report("the guest's RAM holds the request's echo but never the token",
           total >= (200 << 20) and counts["GET /v0/items"] > 0 and counts[E["SECRET_0"]] == 0,
           (counts, total))
    ev = events_for(s["id"])
    kinds = [e["type"] for e in ev]
    bound = [e for e in ev if e["type"] == "session.bound"]
    report("the event stream says the guest was bound, with the scope's digest, before it started",
           bound and bound[0].get("scope_sha256") == digest(scope)
           and kinds.index("session.bound") < kinds.index("session.started"), ev)
    with open(s["audit_log"]) as f:
        first = json.loads(f.readline())
    report("the session's audit log begins with the binding's record",
           first["method"] == "BIND" and first["path"] == "scope-sha256:" + digest(scope)
           and first["outcome"] == "bound", first)
    unbound = os.path.join(E["AUDIT_DIR"], s["id"] + ".unbound.log")
    with open(unbound) as f:
        recs = [json.loads(x) for x in f]
    report("before its binding the guest's broker allowed nothing but its CA certificate",
           recs and recs[0]["method"] == "BIND"
           and all(r["method"] == "BIND" or r["rule"] == "session-ca" or r["decision"] == "deny"
                   for r in recs), recs)
    call("DELETE", "/v1/sessions/" + s["id"])


def unbound_guest():
    """A pool guest not yet taken: its run directory still has bind.sock."""
    for _ in range(600):
        for sid in os.listdir(E["RUNDIR"]):
            if os.path.exists(os.path.join(E["RUNDIR"], sid, "bind.sock")):
                return sid
        time.sleep(0.2)
    return None


def group_prebind():
    sid = unbound_guest()
    if not sid:
        report("a pool guest waits unbound", False, os.listdir(E["RUNDIR"]))
        return
    # What the guest's proxy shim would send: the broker port's socket, as the vsock back end
    # connects to it.
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(10)
    c.connect(os.path.join(E["RUNDIR"], sid, "vsock", "vsock.sock_1026"))
    c.sendall(b"GET http://localhost:%d/v0/items HTTP/1.1\r\nHost: localhost:%d\r\n"
              b"Connection: close\r\n\r\n" % (PORT, PORT))
    answer = b""
    while True:
        b = c.recv(4096)
        if not b:
            break
        answer += b
    report("a request before the binding is refused", answer.startswith(b"HTTP/1.1 403"),
           answer[:200])
    time.sleep(0.3)
    with open(os.path.join(E["AUDIT_DIR"], sid + ".unbound.log")) as f:
        recs = [json.loads(x) for x in f]
    report("... and audited as refused in the guest's unbound log",
           any(r["method"] == "GET" and r["path"] == "/v0/items" and r["decision"] == "deny"
               and r["status"] == 403 for r in recs), recs[-2:])
    with open(E["TMP"] + "/upstream.log", errors="replace") as f:
        report("... and never reaches the upstream", "GET /v0/items" not in f.read(), "")


def group_refused():
    """A scope the global policy refuses: the same words as a cold start, and the guest is
    discarded, never returned to the pool."""
    corp = {"allow": [{"scheme": "https", "host": "wiki.corp.example"}]}
    before = set(os.listdir(E["RUNDIR"]))
    st, js, raw = create(scope=corp)
    st2, js2, raw2 = create(scope=corp, pool=False)
    strip = lambda m: m.split(": ", 1)[1] if m and ": " in m else m  # noqa: E731
    report("a pooled create with a scope the policy refuses is refused, naming the rule",
           st == 422 and 'deny_hosts: "*.corp.example"' in (js or {}).get("error", ""), raw[:300])
    report("... in the words a cold create gets",
           st2 == st and strip(js["error"]) == strip(js2["error"]), (raw[:200], raw2[:200]))
    time.sleep(1)
    gone = before - set(os.listdir(E["RUNDIR"]))
    report("... and the guest it took is discarded, its run directory gone", len(gone) >= 1,
           (before, os.listdir(E["RUNDIR"])))
    st, js, raw = create(scope={"allow": [], "nonsense": 1})
    st2, js2, raw2 = create(scope={"allow": [], "nonsense": 1}, pool=False)
    report("a scope that does not load: the same refusal pooled and cold",
           st == 422 and st2 == 422 and strip(js["error"]) == strip(js2["error"]),
           (raw[:200], raw2[:200]))
    # A broker that cannot start (a vault without its key): refused before any answer, as
    # cold, never a session whose broker is gone.
    with open(E["TMP"] + "/badvault", "w") as f:
        f.write("garbage\n")
    sc = scope_for(5, "/v5/")
    st, js, raw = create(scope=sc, vault=E["TMP"] + "/badvault")
    st2, js2, raw2 = create(scope=sc, vault=E["TMP"] + "/badvault", pool=False)
    report("a vault the broker cannot open: refused pooled as cold, with the broker's words",
           st == 422 and st2 == 422 and "cannot open key file" in js["error"]
           and "cannot open key file" in js2["error"], (raw[:200], raw2[:200]))
    st, js, raw = create(scope={"allow": [], "work": {"path": E["TMP"]}})
    report("a scope asking for a work directory boots cold, and says why",
           st != 201 or (js["pooled"] is False and "work directory" in js["pool_miss"]), raw[:300])
    if st == 201:
        call("DELETE", "/v1/sessions/" + js["id"])


def group_shared():
    """Two pooled sessions bound at once to one shared broker, each to its own scope."""
    res = {}

    def one(n):
        res[n] = create(scope=scope_for(n, "/v%d/" % n), broker=E["SHARED"])
    ts = [threading.Thread(target=one, args=(n,)) for n in (1, 2)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    if any(res[n][0] != 201 for n in (1, 2)):
        report("two pooled creates bound to one shared broker", False, res)
        return
    a, b = res[1][1], res[2][1]
    report("two pooled creates bound to one shared broker at once", a["pooled"] and b["pooled"]
           and a["broker"] == "shared" and b["broker"] == "shared", (a, b))
    oa, _, _ = curl(a["id"], "/v1/items")
    ob, _, _ = curl(b["id"], "/v2/items")
    xa, _, _ = curl(a["id"], "/v2/items")
    xb, _, _ = curl(b["id"], "/v1/items")
    report("each reaches its own destination with its own secret",
           b"status=200" in oa and b"status=200" in ob and upstream_saw("/v1/items", E["SECRET_1"])
           and upstream_saw("/v2/items", E["SECRET_2"]), (oa[:200], ob[:200]))
    report("... and neither reaches the other's", b"status=403" in xa and b"status=403" in xb,
           (xa[:200], xb[:200]))
    firsts = []
    for s_, n in ((a, 1), (b, 2)):
        with open(os.path.join(E["TMP"], "shared-audit", s_["id"] + ".log")) as f:
            firsts.append(json.loads(f.readline()))
    report("the shared broker's log of each begins with its binding's record", all(
        r["method"] == "BIND" and r["path"] == "scope-sha256:" + digest(scope_for(n, "/v%d/" % n))
        for r, n in zip(firsts, (1, 2))), firsts)
    cas = [exec_frames(s["id"], ["cat", "/etc/ssl/certs/ca-certificates.crt"])[0] for s in (a, b)]
    report("each guest trusts a session CA of its own", all(c.startswith(b"-----BEGIN CERT")
                                                             for c in cas) and cas[0] != cas[1],
           [c[:60] for c in cas])
    for s in (a, b):
        call("DELETE", "/v1/sessions/" + s["id"])


def group_deadbroker():
    """A shared broker that is not there, or that dies during the binding: a clear error, and
    no guest left half-bound."""
    st, js, raw = create(scope=scope_for(3, "/v3/"), broker=E["TMP"] + "/nobroker.sock")
    report("a binding to a shared broker that is not there is refused, saying so",
           st == 422 and "cannot reach the shared broker" in js.get("error", ""), raw[:300])
    path = E["TMP"] + "/dying.sock"
    srv = socket.socket(socket.AF_UNIX)
    srv.bind(path)
    srv.listen(4)

    def die():  # takes the registration, then goes away without an answer
        c, _ = srv.accept()
        c.recv(65536)
        c.close()
        srv.close()
    t = threading.Thread(target=die)
    t.start()
    st, js, raw = create(scope=scope_for(3, "/v3/"), broker=path)
    t.join()
    report("a shared broker that dies during the binding: refused, saying so",
           st == 422 and "shared broker" in js.get("error", ""), raw[:300])
    st, js, _, _ = call("GET", "/v1/sessions")
    report("no half-bound session is left listed", all(s["broker"] != "shared"
                                                        for s in js["sessions"]), js)


def group_many():
    """10 concurrent pooled creates with scopes, from a pool of 10."""
    res = {}

    def one(n):
        st, s, raw = create(scope=scope_for(n, "/v%d/" % n), vault=E["VAULT"], ca_file=E["CA"])
        out = curl(s["id"], "/v%d/many" % n)[0] if st == 201 else raw
        res[n] = (st, s, out)
    ts = [threading.Thread(target=one, args=(n,)) for n in range(10)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    good = [n for n in range(10) if res[n][0] == 201 and res[n][1]["pooled"]
            and b"status=200" in res[n][2] and upstream_saw("/v%d/many" % n, E["SECRET_%d" % n])
            and not any(E["SECRET_%d" % k].encode() in res[n][2] for k in range(10))]
    report("10 concurrent pooled creates with scopes: each its own token, none seen",
           len(good) == 10, {n: (res[n][0], res[n][2][:120]) for n in range(10) if n not in good})
    for n in range(10):
        if res[n][0] == 201:
            call("DELETE", "/v1/sessions/" + res[n][1]["id"])


def group_bindonce():
    """A guest is bound at most once: after one attempt (refused here: its scope asks for a
    work directory), its supervisor takes no other."""
    sid = unbound_guest()
    path = os.path.join(E["RUNDIR"], sid, "bind.sock")
    with open(E["TMP"] + "/work-scope.json", "w") as f:
        json.dump({"allow": [], "work": {"path": E["TMP"]}}, f)
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(20)
    c.connect(path)
    c.sendall(json.dumps({"scope": E["TMP"] + "/work-scope.json"}).encode() + b"\n")
    a = json.loads(c.makefile().readline())
    report("a binding whose scope asks for a work directory is refused by the supervisor",
           a["ok"] is False and "work directory" in a["error"], a)
    report("... and the guest takes no second binding", not os.path.exists(path), path)
    # The daemon finds it unusable when it takes it: another guest or a cold boot serves.
    st, js, raw = create(scope={"allow": []})
    report("a create after that still gets a session bound to its scope", st == 201, raw[:300])
    if st == 201:
        call("DELETE", "/v1/sessions/" + js["id"])


def group_shapes():
    """Pools per shape: a create finds the pool of its memory and vCPUs; another shape, or an
    empty pool, boots cold and says why."""
    st, p, _, _ = call("GET", "/v1/pool")
    shapes = sorted((q["mem_mib"], q["cpus"], q["size"]) for q in p.get("pools", []))
    report("GET /v1/pool lists each pool's shape", shapes == [(256, 1, 10), (320, 2, 1)], p)
    st, a, raw = create(mem_mib=320, cpus=2, scope=scope_for(4, "/v4/"), vault=E["VAULT"],
                        ca_file=E["CA"])
    st2, b, raw2 = create(mem_mib=320, cpus=2, scope=scope_for(4, "/v4/"), vault=E["VAULT"],
                          ca_file=E["CA"])
    report("a create of another shape takes a guest of its pool, scope bound",
           st == 201 and a["pooled"] and a["mem_mib"] == 320 and a["cpus"] == 2, raw[:300])
    out, ex, e = curl(a["id"], "/v4/shape") if st == 201 else (b"", None, None)
    report("... and its request carries its token", b"status=200" in out
           and upstream_saw("/v4/shape", E["SECRET_4"]), out[:200])
    report("the next one of that shape finds its pool empty, boots cold and says so",
           st2 == 201 and not b["pooled"] and b["pool_miss"] == "the pool was empty", raw2[:300])
    st3, c, raw3 = create(mem_mib=384)
    report("a shape no pool has boots cold, naming it",
           st3 == 201 and not c["pooled"] and "no pool of no image, 384 MiB, 1 vCPU"
           in (c["pool_miss"] or ""), raw3[:300])
    for st_, s_ in ((st, a), (st2, b), (st3, c)):
        if st_ == 201:
            call("DELETE", "/v1/sessions/" + s_["id"])


def group_race():
    """Guest connections while the guest is bound: each request is answered and recorded once,
    by the empty broker (403, in the unbound log) or the bound one (200, in its log and
    upstream), never both, never neither. The binding is sent to the supervisor directly, as
    the daemon sends it: this guest is then bound behind the daemon's back."""
    sid = unbound_guest()
    port = os.path.join(E["RUNDIR"], sid, "vsock", "vsock.sock_1026")
    with open(E["TMP"] + "/race-scope.json", "w") as f:
        json.dump({"allow": [{"scheme": "https", "host": "localhost", "port": PORT,
                              "path_prefix": "/v6/", "allow_addresses": ["127.0.0.1"]}]}, f)
    tag, res, stop, lock = os.urandom(4).hex(), [], [], threading.Lock()

    def hammer(k):
        n = 0
        while not stop:
            n += 1
            path = "/v6/race-%s-%d-%d" % (tag, k, n)
            answer = b""
            try:
                c = socket.socket(socket.AF_UNIX)
                c.settimeout(10)
                c.connect(port)
                c.sendall(b"GET http://localhost:%d%s HTTP/1.1\r\nHost: localhost:%d\r\n"
                          b"Connection: close\r\n\r\n" % (PORT, path.encode(), PORT))
                while True:
                    b = c.recv(65536)
                    if not b:
                        break
                    answer += b
                c.close()
            except OSError:
                pass
            with lock:
                res.append((path, answer[9:12].decode(errors="replace")))
    ts = [threading.Thread(target=hammer, args=(k,)) for k in range(4)]
    for t in ts:
        t.start()
    time.sleep(0.5)
    c = socket.socket(socket.AF_UNIX)
    c.settimeout(20)
    c.connect(os.path.join(E["RUNDIR"], sid, "bind.sock"))
    c.sendall(json.dumps({"scope": E["TMP"] + "/race-scope.json", "ca_file": E["CA"]}).encode()
              + b"\n")
    a = json.loads(c.makefile().readline())
    time.sleep(0.5)
    stop.append(1)
    for t in ts:
        t.join()
    time.sleep(1)
    logs = []
    for name in (sid + ".unbound.log", sid + ".log"):
        with open(os.path.join(E["AUDIT_DIR"], name)) as f:
            logs.append({r["path"]: r["status"] for r in map(json.loads, f)})
    with open(E["TMP"] + "/upstream.log", errors="replace") as f:
        up = f.read()
    odd = []
    for path, st in res:
        before, after = logs[0].get(path), logs[1].get(path)
        seen = ("GET %s\n" % path) in up  # https-echo logs the method, the target, a newline
        right = ((st == "403" and before == 403 and after is None and not seen) or
                 (st == "200" and after == 200 and before is None and seen))
        if not right:
            odd.append((path, st, before, after))
    report("requests racing the binding: each answered and recorded once, before or after",
           a["ok"] and not odd and any(st == "403" for _, st in res)
           and any(st == "200" for _, st in res), (a, len(res), odd[:5]))


GROUPS = {"race": group_race, "shapes": group_shapes, "inject": group_inject, "prebind": group_prebind, "refused": group_refused,
          "shared": group_shared, "deadbroker": group_deadbroker, "many": group_many,
          "bindonce": group_bindonce}

if __name__ == "__main__":
    try:
        GROUPS[sys.argv[2]]()
    except Exception as ex:  # a check that could not run is a failure, never a pass
        report("group %s ran to its end" % sys.argv[2], False, repr(ex))
