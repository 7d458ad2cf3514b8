#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/serve_suite.py: checks of `bulkhead serve` over its socket, with raw HTTP
# (http.client on a Unix socket), for tests/e2e/test_serve.sh. Prints one line per check:
# "PASS name" or "FAIL name: detail". Usage: serve_suite.py SOCKET GROUP
import base64
import hashlib
import http.client
import json
import os
import shutil
import socket
import sys
import threading
import time

SOCK = sys.argv[1]


class Conn(http.client.HTTPConnection):
    def __init__(self, timeout=120):
        super().__init__("bulkhead", timeout=timeout)

    def connect(self):
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(SOCK)
        self.sock = s


def call(method, path, body=None, raw=None, timeout=120):
    c = Conn(timeout)
    data = raw if raw is not None else (json.dumps(body).encode() if body is not None else None)
    c.request(method, path, body=data)
    r = c.getresponse()
    out = r.read()
    c.close()
    try:
        js = json.loads(out) if out else None
    except ValueError:
        js = None
    return r.status, js, out, r.getheader("Content-Type")


def exec_frames(sid, cmd, **kw):
    """Runs cmd; returns (stdout bytes, stderr bytes, exit dict or None, error or None)."""
    body = dict(cmd=cmd, **kw)
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid, body=json.dumps(body))
    r = c.getresponse()
    if r.status != 200:
        return b"", b"", None, "%d %s" % (r.status, r.read()[:200])
    out, err, ex, error = [], [], None, None
    for line in r:
        line = line.strip()
        if not line:
            continue
        f = json.loads(line)
        if "stdout" in f:
            out.append(base64.b64decode(f["stdout"]))
        elif "stderr" in f:
            err.append(base64.b64decode(f["stderr"]))
        elif "exit" in f:
            ex = f["exit"]
        elif "error" in f:
            error = f["error"]
    c.close()
    return b"".join(out), b"".join(err), ex, error


def report(name, ok, detail=""):
    print(("PASS %s" % name) if ok else ("FAIL %s: %s" % (name, str(detail)[:400])), flush=True)


def create(**kw):
    st, js, raw, _ = call("POST", "/v1/sessions", kw)
    if st != 201:
        raise RuntimeError("create: %d %s" % (st, raw[:300]))
    return js


def group_basic():
    st, js, _, ct = call("GET", "/v1/health")
    report("health answers ok as JSON", st == 200 and js and js["ok"] is True
           and ct == "application/json", (st, js, ct))
    s = create(env={"GREETING": "hello"})
    report("a create takes a guest from the pool at once", s["pooled"] is True
           and s["state"] == "running" and s["pool_miss"] is None, s)
    sid = s["id"]
    out, err, ex, e = exec_frames(sid, ["sh", "-c", "echo $GREETING; echo oops >&2; exit 7"])
    report("exec streams stdout, stderr and the exit code", out == b"hello\n"
           and err == b"oops\n" and ex and ex["code"] == 7 and ex["status"] == 7, (out, err, ex, e))
    blob = bytes(range(256)) * 4
    out, _, ex, e = exec_frames(sid, ["cat"], stdin_b64=base64.b64encode(blob).decode())
    report("binary stdin and stdout round-trip byte for byte", out == blob and ex
           and ex["code"] == 0, (len(out), ex, e))
    out, _, ex, e = exec_frames(sid, ["sh", "-c", "head -c 8388608 /dev/urandom | tee /tmp/r"
                                      " | sha256sum >&2; cat /tmp/r"])
    _, err, _, _ = exec_frames(sid, ["sha256sum", "/tmp/r"])
    report("8 MiB of output arrives whole", len(out) == 8388608 and
           err == b"" and ex and ex["code"] == 0, (len(out), ex, e))
    out, _, ex, e = exec_frames(sid, ["sh", "-c", "kill -TERM $$"])
    report("a command killed by a signal: code null, signal 15, status 143",
           ex == {"code": None, "signal": 15, "status": 143}, (ex, e))
    out, _, ex, e = exec_frames(sid, ["pwd"])
    report("commands start in /work", out == b"/work\n", out)
    out, _, ex, e = exec_frames(sid, ["sh", "-c", "echo $GREETING-$X"], env={"X": "y",
                                                                          "GREETING": "over"})
    report("the exec's env wins over the session's", out == b"over-y\n", out)
    out, _, ex, e = exec_frames(sid, ["/no/such/program"])
    report("a missing program is an error frame or exit 127",
           (e is not None) or (ex and ex["status"] == 127), (ex, e))
    st, js, _, _ = call("GET", "/v1/sessions/" + sid)
    report("get shows the session", st == 200 and js["id"] == sid, js)
    st, js, _, _ = call("GET", "/v1/sessions")
    report("list holds it", st == 200 and sid in [x["id"] for x in js["sessions"]], js)
    st, js, _, _ = call("DELETE", "/v1/sessions/" + sid)
    report("delete answers its last state", st == 200 and js["state"] == "ended"
           and js["end_reason"] == "deleted", js)
    report("its work directory is removed", not os.path.exists(s["work"]), s["work"])
    st, js, _, _ = call("GET", "/v1/sessions/" + sid)
    report("a deleted session is 404", st == 404 and "error" in js, (st, js))
    st, js, _, _ = call("POST", "/v1/sessions/%s/exec" % sid, {"cmd": ["true"]})
    report("exec in a deleted session is 404", st == 404, (st, js))


def group_errors():
    cases = [
        ("malformed JSON", "POST", "/v1/sessions", b'{"image": ', 400, "malformed JSON"),
        ("a body that is not an object", "POST", "/v1/sessions", b'[1]', 400, "object"),
        ("an unknown field", "POST", "/v1/sessions", b'{"imagee": "x"}', 400, "imagee"),
        ("a field of the wrong type", "POST", "/v1/sessions", b'{"mem_mib": "lots"}', 400,
         "mem_mib"),
        ("memory out of range", "POST", "/v1/sessions", b'{"mem_mib": 1}', 400, "mem_mib"),
        ("a relative work path", "POST", "/v1/sessions", b'{"work": "rel"}', 400, "absolute"),
        ("a duplicate key", "POST", "/v1/sessions", b'{"pool": true, "pool": false}', 400,
         "duplicate"),
        ("an env name with '='", "POST", "/v1/sessions", b'{"env": {"A=B": "c"}}', 400, "env"),
        ("an unknown route", "GET", "/v1/nothing", None, 404, "no such"),
        ("a wrong method", "DELETE", "/v1/sessions", None, 405, "takes"),
        ("an unknown session", "GET", "/v1/sessions/0123456789abcdef", None, 404, "session"),
        ("an unknown exec's stdin", "POST", "/v1/execs/0123456789abcdef/stdin", b"x", 404,
         "exec"),
        ("an unknown approval", "POST", "/v1/approvals/nope/approve", b"{}", 404, "approval"),
        ("a body over 1 MiB", "POST", "/v1/sessions", b" " * (2 << 20), 413, "bytes"),
        ("a fraction of a MiB", "POST", "/v1/sessions", b'{"mem_mib": 64.5}', 400, "mem_mib"),
        ("a FIFO as the scope", "POST", "/v1/sessions",
         json.dumps({"scope": sys.argv[3] + "/fifo"}).encode(), 400, "not a regular file"),
        ("the daemon's own state as work", "POST", "/v1/sessions",
         json.dumps({"work": sys.argv[4]}).encode(), 400, "daemon's own files"),
    ]
    for name, m, path, raw, want, word in cases:
        st, js, out, _ = call(m, path, raw=raw)
        report("%s: %d naming the problem" % (name, want), st == want and js
               and word.lower() in js.get("error", "").lower(), (st, out[:200]))
    st, js, raw, _ = call("GET", "/v1/no%ff%01such")
    report("a URL of bytes that are not UTF-8: 404, still valid JSON", st == 404 and js
           and "no such resource" in js.get("error", ""), (st, raw[:100]))
    st, js, _, _ = call("POST", "/v1/sessions", {"image": "no-such-image", "pool": False})
    report("an unknown image: 422 with the supervisor's reason", st == 422 and
           "no-such-image" in js.get("error", ""), (st, js))
    st, js, _, _ = call("GET", "/v1/health")
    report("the daemon is unaffected", st == 200 and js["ok"], js)


def group_cold():
    s = create(pool=False)
    report("pool: false boots cold", s["pooled"] is False and s["ready_ms"] > 50, s)
    out, _, ex, _ = exec_frames(s["id"], ["echo", "cold"])
    report("a cold session runs commands", out == b"cold\n", out)
    call("DELETE", "/v1/sessions/" + s["id"])
    s = create(mem_mib=320)
    report("a create the pool cannot serve says why", s["pooled"] is False
           and "no pool of no image, 320 MiB" in (s["pool_miss"] or ""), s)
    call("DELETE", "/v1/sessions/" + s["id"])
    # The scope's own expiry ends the session in its supervisor: timed_out all the same.
    soon = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() + 8))
    s = create(scope={"allow": [], "expires_at": soon})
    for _ in range(200):
        st, js, _, _ = call("GET", "/v1/sessions/" + s["id"])
        if js["state"] == "ended":
            break
        time.sleep(0.1)
    report("a scope's expiry: timed_out, exit_code 124, saying it expired",
           js["end_reason"] == "timed_out" and js["exit_code"] == 124
           and "expired" in (js["end_message"] or ""), js)
    call("DELETE", "/v1/sessions/" + s["id"])
    # Over its memory limit: the guest fills its RAM past the session's cgroup limit.
    s = create(mem_mib=256, mem_limit_mib=200)
    exec_frames(s["id"], ["sh", "-c", "head -c 230000000 /dev/zero > /tmp/x"])
    for _ in range(100):
        st, js, _, _ = call("GET", "/v1/sessions/" + s["id"])
        if js["state"] == "ended":
            break
        time.sleep(0.1)
    report("a session over its memory limit ends as over_memory, saying so",
           js["end_reason"] == "over_memory" and "memory limit" in (js["end_message"] or ""), js)
    call("DELETE", "/v1/sessions/" + s["id"])


def approvals_at_once():
    """GET /v1/approvals from 8 clients at once, while the daemon's own thread looks for new
    approvals every second: each lists every broker's control socket, so none may share its
    list with another (a ThreadSanitizer build fails on a shared one: make test-tsan)."""
    answers, lock = [], threading.Lock()

    def ask():
        for _ in range(15):
            try:
                st, js, _, _ = call("GET", "/v1/approvals", timeout=30)
                ok = st == 200 and isinstance(js.get("approvals"), list)
            except Exception as ex:  # noqa: BLE001 - the daemon's death shows here
                ok = repr(ex)
            with lock:
                answers.append(ok)
    ts = [threading.Thread(target=ask) for _ in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    report("approvals listed by 8 clients at once: 120 answers, each a list",
           answers == [True] * 120, sorted(set(map(str, answers))))


def group_many():
    """200 execs across 10 concurrent sessions, every byte and exit code checked."""
    sids = []
    lock = threading.Lock()

    errors = []

    def make():
        try:
            s = create()
        except Exception as ex:
            with lock:
                errors.append(repr(ex))
            return
        with lock:
            sids.append(s["id"])
    ts = [threading.Thread(target=make) for _ in range(10)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    bad = []

    def work(sid, k):
        for i in range(20):
            n = (k * 20 + i) * 997 % 65536 + 1
            code = (k + i) % 100
            cmd = ["sh", "-c", "head -c %d /dev/zero | tr '\\0' '%s'; echo tail%d >&2; exit %d"
                   % (n, chr(97 + i % 26), i, code)]
            out, err, ex, e = exec_frames(sid, cmd)
            if (out != chr(97 + i % 26).encode() * n or err != b"tail%d\n" % i or not ex
                    or ex["code"] != code):
                with lock:
                    bad.append((sid, i, len(out), err[:20], ex, e))
    ts = [threading.Thread(target=work, args=(sid, k)) for k, sid in enumerate(sids)]
    [t.start() for t in ts]
    [t.join() for t in ts]
    report("10 concurrent sessions made", len(sids) == 10, (sids, errors[:2]))
    report("200 execs across 10 sessions: every byte and exit code right", not bad
           and len(sids) == 10, bad[:3])
    approvals_at_once()  # with the 10 sessions' run directories to look through
    for sid in sids:
        call("DELETE", "/v1/sessions/" + sid)


def rss_kib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1])
    return 0


def group_streams(daemon_pid):
    s = create()
    sid = s["id"]
    # A client that goes away mid-stream: the command is ended.
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid, body=json.dumps(
        {"cmd": ["sh", "-c", "echo started; sleep 3; echo late > /work/late"]}))
    r = c.getresponse()
    r.readline()
    r.readline()
    c.sock.close()
    c.close()
    time.sleep(5)
    report("a client that disconnects mid-stream ends its command",
           not os.path.exists(os.path.join(s["work"], "late")), os.listdir(s["work"]))
    # A slow reader: 64 MiB of output read at a trickle; the daemon's memory stays bounded.
    before = rss_kib(daemon_pid)
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid,
              body=json.dumps({"cmd": ["sh", "-c", "head -c 67108864 /dev/zero"]}))
    r = c.getresponse()
    got = 0
    for _ in range(20):
        got += len(r.readline())
        time.sleep(0.1)
    peak = rss_kib(daemon_pid)
    c.sock.close()
    c.close()
    report("a slow reader holds the command back: the daemon grows < 16 MiB",
           peak - before < 16384 and got > 0, (before, peak, got))
    # stdin kept open, fed by other requests; a signal to a running command.
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid,
              body=json.dumps({"cmd": ["sh", "-c", "read a; echo got:$a; read b; echo $b"],
                               "stdin_open": True}))
    r = c.getresponse()
    eid = json.loads(r.readline())["exec"]
    st1 = call("POST", "/v1/execs/%s/stdin" % eid, raw=b"one\n")[0]
    st2 = call("POST", "/v1/execs/%s/stdin?eof=1" % eid, raw=b"two\n")[0]
    lines = [json.loads(x) for x in r.read().splitlines() if x.strip()]
    c.close()
    outs = b"".join(base64.b64decode(f["stdout"]) for f in lines if "stdout" in f)
    report("stdin_open: stdin fed by later requests, then closed", st1 == 204 and st2 == 204
           and outs == b"got:one\ntwo\n", (st1, st2, outs))
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid,
              body=json.dumps({"cmd": ["sh", "-c", "trap 'echo trapped; exit 9' USR1; "
                                       "echo ready; while :; do sleep 0.1; done"]}))
    r = c.getresponse()
    eid = json.loads(r.readline())["exec"]
    r.readline()  # ready
    st = call("POST", "/v1/execs/%s/signal" % eid, {"signal": "USR1"})[0]
    lines = [json.loads(x) for x in r.read().splitlines() if x.strip()]
    c.close()
    outs = b"".join(base64.b64decode(f["stdout"]) for f in lines if "stdout" in f)
    ex = [f["exit"] for f in lines if "exit" in f]
    report("a signal reaches the running command", st == 204 and outs == b"trapped\n"
           and ex and ex[0]["code"] == 9, (st, outs, ex))
    c = Conn()
    c.request("POST", "/v1/sessions/%s/exec" % sid,
              body=json.dumps({"cmd": ["sh", "-c", "stty size; read x; stty size"], "tty": True,
                               "rows": 30, "cols": 100, "stdin_open": True}))
    r = c.getresponse()
    eid = json.loads(r.readline())["exec"]
    time.sleep(1)
    st = call("POST", "/v1/execs/%s/resize" % eid, {"rows": 50, "cols": 132})[0]
    time.sleep(0.5)
    call("POST", "/v1/execs/%s/stdin" % eid, raw=b"\n")
    lines = [json.loads(x) for x in r.read().splitlines() if x.strip()]
    c.close()
    outs = b"".join(base64.b64decode(f["stdout"]) for f in lines if "stdout" in f)
    report("tty: the window size, then a resize", st == 204 and b"30 100" in outs
           and b"50 132" in outs, (st, outs))
    st, js, _, _ = call("GET", "/v1/health")
    report("the daemon still answers", st == 200, js)
    call("DELETE", "/v1/sessions/" + sid)
    delete_under_streams()


def delete_under_streams():
    """A session deleted while exec streams on it are open: the streams end as its guest
    does, each letting go of the session while the delete still waits for the supervisor.
    Every stream ends with a frame, the delete is answered, the daemon lives (a sanitizer
    build says so if the delete used the session after the last stream freed it)."""
    ends, deletes = [], []
    for _ in range(2):
        sid = create()["id"]
        streams = []
        for _ in range(4):
            c = Conn()
            c.request("POST", "/v1/sessions/%s/exec" % sid, body=json.dumps(
                {"cmd": ["sh", "-c", "echo up; sleep 60"]}))
            r = c.getresponse()
            r.readline()  # the exec's id
            r.readline()  # up
            streams.append((c, r))
        deletes.append(call("DELETE", "/v1/sessions/" + sid)[0])
        for c, r in streams:
            frames = [json.loads(x) for x in r.read().splitlines() if x.strip()]
            ends.append(any("exit" in f or "error" in f for f in frames))
            c.close()
    st = call("GET", "/v1/health")[0]
    report("a session deleted under 4 open exec streams: each stream ends with a frame, "
           "the delete is answered, the daemon lives",
           deletes == [200, 200] and ends == [True] * 8 and st == 200, (deletes, ends, st))


def group_timeout():
    s = create(timeout_s=2)
    out, _, ex, e = exec_frames(s["id"], ["sleep", "30"])
    for _ in range(100):  # the supervisor takes a moment to end after its guest
        st, js, _, _ = call("GET", "/v1/sessions/" + s["id"])
        if js["state"] == "ended":
            break
        time.sleep(0.1)
    report("timeout_s ends the session: timed_out, exit_code 124", js["state"] == "ended"
           and js["end_reason"] == "timed_out" and js["exit_code"] == 124, js)
    report("... and the command's stream ends with an error frame", e is not None and ex is None,
           (ex, e))
    call("DELETE", "/v1/sessions/" + s["id"])


def group_events():
    c = Conn()
    c.request("GET", "/v1/events")
    r = c.getresponse()
    seen = []

    def read():
        for line in r:
            if line.strip():
                seen.append(json.loads(line))
                if seen[-1]["type"] == "session.deleted":
                    return
    t = threading.Thread(target=read, daemon=True)
    t.start()
    s = create()
    call("DELETE", "/v1/sessions/" + s["id"])
    t.join(30)
    types = [e["type"] for e in seen if e.get("session") == s["id"] and e["type"] != "pool.ready"]
    report("events: started, ended and deleted, in order, as they happen",
           types[:1] == ["session.started"] and types[-1] == "session.deleted"
           and "session.ended" in types, types)
    seqs = [e["seq"] for e in seen]
    report("events carry increasing sequence numbers", seqs == sorted(seqs) and
           len(set(seqs)) == len(seqs), seqs)
    last = seqs[-1] if seqs else 0
    c2 = Conn(timeout=3)
    c2.request("GET", "/v1/events?since=%d" % (last - 2))
    r2 = c2.getresponse()
    replay = []
    try:
        for line in r2:
            if line.strip():
                replay.append(json.loads(line)["seq"])
            if len(replay) == 2:
                break
    except socket.timeout:
        pass
    report("?since= replays what came after", replay == [last - 1, last], (replay, last))


def group_files():
    import io
    import tarfile
    s = create()
    sid = s["id"]
    data = os.urandom(300000)
    st, js, _, _ = call("PUT", "/v1/sessions/%s/files/up.bin" % sid, raw=data)
    out, _, ex, _ = exec_frames(sid, ["sha256sum", "/work/up.bin"])
    report("a file put is in the guest, byte for byte", st == 201 and js["size"] == len(data)
           and out.split()[0].decode() == hashlib.sha256(data).hexdigest(), (st, js, out))
    exec_frames(sid, ["sh", "-c", "printf made > /work/g.txt; ln -s / /work/root; "
                      "ln -s ../../.. /work/up; mkfifo /work/fifo"])
    st, _, raw, ct = call("GET", "/v1/sessions/%s/files/g.txt" % sid)
    report("a file the guest made comes back", st == 200 and raw == b"made"
           and ct == "application/octet-stream", (st, raw, ct))
    for path in ("root/etc/passwd", "up/etc/passwd", "../../../../etc/passwd", "%2Fetc%2Fpasswd"):
        st, js, raw, _ = call("GET", "/v1/sessions/%s/files/%s" % (sid, path))
        report("GET %s: refused, no host file" % path, st in (400, 404) and b"root:" not in raw,
               (st, raw[:100]))
    st, js, _, _ = call("PUT", "/v1/sessions/%s/files/root/tmp/planted" % sid, raw=b"x")
    report("PUT through a guest's link to / is refused", st == 400
           and not os.path.exists("/tmp/planted"), (st, js))
    t0 = time.monotonic()
    st, js, _, _ = call("GET", "/v1/sessions/%s/files/fifo" % sid)
    report("a guest's FIFO is refused at once (409), never opened", st == 409
           and time.monotonic() - t0 < 5, (st, js))
    st, js, _, _ = call("PUT", "/v1/sessions/%s/files/x?mode=4755" % sid, raw=b"x")
    report("a set-ID mode is refused", st == 400, (st, js))
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for name, body in (("d/a.txt", b"alpha"), ("d/e/b.txt", b"beta")):
            ti = tarfile.TarInfo(name)
            ti.size = len(body)
            t.addfile(ti, io.BytesIO(body))
    st, js, _, _ = call("PUT", "/v1/sessions/%s/archive/in" % sid, raw=buf.getvalue())
    report("an archive into a directory that does not exist: 404", st == 404, (st, js))
    exec_frames(sid, ["mkdir", "/work/in"])
    st, js, _, _ = call("PUT", "/v1/sessions/%s/archive/in" % sid, raw=buf.getvalue())
    exec_frames(sid, ["true"])
    out, _, ex, _ = exec_frames(sid, ["cat", "/work/in/d/a.txt", "/work/in/d/e/b.txt"])
    report("an archive put unpacks under its directory", st == 201 and out == b"alphabeta",
           (st, js, out))
    st, _, raw, ct = call("GET", "/v1/sessions/%s/archive/in" % sid)
    names = []
    if st == 200:
        with tarfile.open(fileobj=io.BytesIO(raw)) as t:
            names = sorted(m.name for m in t.getmembers() if m.isfile())
    report("an archive get returns the tree", st == 200 and ct == "application/x-tar"
           and [n.lstrip("./") for n in names] == ["d/a.txt", "d/e/b.txt"], (st, names))
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w") as t:
        ti = tarfile.TarInfo("../../evil")
        ti.size = 1
        t.addfile(ti, io.BytesIO(b"x"))
    st, js, _, _ = call("PUT", "/v1/sessions/%s/archive/" % sid, raw=evil.getvalue())
    report("an archive entry leaving the directory is refused, naming it", st == 400
           and "evil" in js.get("error", ""), (st, js))
    exec_frames(sid, ["sh", "-c", "mkdir /work/sparse && dd if=/dev/zero of=/work/sparse/big "
                      "bs=1 count=1 seek=8589934592 2>/dev/null"])
    t0 = time.monotonic()
    st, js, _, _ = call("GET", "/v1/sessions/%s/archive/sparse" % sid)
    report("a guest's 8 GiB sparse file: its archive is refused (413), not spooled",
           st == 413 and "spool" in js.get("error", "") and time.monotonic() - t0 < 20,
           (st, js, time.monotonic() - t0))
    call("DELETE", "/v1/sessions/" + sid)
    ro = create(work=sys.argv[3], work_ro=True)
    st, js, _, _ = call("PUT", "/v1/sessions/%s/files/x" % ro["id"], raw=b"x")
    report("a read-only work directory takes no upload", st == 409
           and not os.path.exists(os.path.join(sys.argv[3], "x")), (st, js))
    call("DELETE", "/v1/sessions/" + ro["id"])
    # A host work directory's credential files and rules, as `bulkhead run`'s options: a .env
    # refuses the create (422, named); hidden, it is empty to the guest, and a read-only rule
    # holds there.
    env_file = os.path.join(sys.argv[3], ".env")
    os.makedirs(os.path.join(sys.argv[3], "conf"), exist_ok=True)
    with open(env_file, "w") as f:
        f.write("KEY=SERVESECRET7x\n")
    st, js, _, _ = call("POST", "/v1/sessions", {"work": sys.argv[3]})
    report("a host work directory holding a .env: 422, naming it", st == 422
           and ".env (a .env with values)" in js.get("error", ""), (st, js))
    st, js, _, _ = call("POST", "/v1/sessions", {"work_rules": {"conf": "ro"}})
    report("work_rules without a host work directory: 400", st == 400, (st, js))
    st, js, _, _ = call("POST", "/v1/sessions", {"work": sys.argv[3], "work_rules": {"../x": "ro"}})
    report("a work_rules path with ..: 400 naming it", st == 400
           and "../x" in js.get("error", ""), (st, js))
    h = create(work=sys.argv[3], share_secrets="hide", work_rules={"conf": "ro"})
    out, _, _, _ = exec_frames(h["id"], ["sh", "-c", "wc -c < /work/.env; "
                                         "touch /work/conf/x 2>/dev/null; echo touch=$?"])
    report("share_secrets hide and work_rules: the .env empty, conf read-only",
           out.split() == [b"0", b"touch=1"] and b"SERVESECRET" not in out, out)
    call("DELETE", "/v1/sessions/" + h["id"])
    os.remove(env_file)
    # As many rules as the API takes (64) reach the supervisor whole, the share with them: the
    # last rule holds as surely as the first.
    for i in range(64):
        os.makedirs(os.path.join(sys.argv[3], "many", "d%02d" % i), exist_ok=True)
    with open(os.path.join(sys.argv[3], "many", "d63", "f"), "w") as f:
        f.write("seen")
    rules = {"many/d%02d" % i: "ro" for i in range(63)}
    rules["many/d63"] = "hidden"
    h = create(work=sys.argv[3], work_rules=rules)
    out, _, _, _ = exec_frames(h["id"], ["sh", "-c", "ls /work/many | wc -l; ls -A /work/many/d63 "
                                         "| wc -l; touch /work/many/d00/x 2>/dev/null; echo $?"])
    report("64 work_rules: the share given, the first read-only, the last hidden",
           out.split() == [b"64", b"0", b"1"], out)
    call("DELETE", "/v1/sessions/" + h["id"])
    shutil.rmtree(os.path.join(sys.argv[3], "many"))
    # A session deleted while requests for it are still in flight (a request's answer sent
    # but its hold on the session not yet let go): each of them answered, the daemon alive
    # (a sanitizer build of it says so if the session is used after it was freed).
    answered, lock = [], threading.Lock()
    for _ in range(4):
        sid = create()["id"]
        call("PUT", "/v1/sessions/%s/files/f" % sid, raw=b"f")

        def hammer(sid=sid):
            for _ in range(15):
                try:
                    st = call("GET", "/v1/sessions/%s/files/f" % sid, timeout=30)[0]
                except Exception as ex:  # noqa: BLE001 - the daemon's death shows here
                    st = repr(ex)
                with lock:
                    answered.append(st)
        ts = [threading.Thread(target=hammer) for _ in range(6)]
        for t in ts:
            t.start()
        time.sleep(0.05)
        call("DELETE", "/v1/sessions/" + sid)
        for t in ts:
            t.join()
    report("sessions deleted with requests in flight: every request answered 200 or 404",
           len(answered) == 4 * 6 * 15 and all(st in (200, 404) for st in answered),
           sorted(set(map(str, answered))))


GROUPS = {"files": group_files, "basic": group_basic, "errors": group_errors, "cold": group_cold, "many": group_many,
          "streams": lambda: group_streams(int(sys.argv[3])), "timeout": group_timeout,
          "events": group_events}

if __name__ == "__main__":
    try:
        GROUPS[sys.argv[2]]()
    except Exception as ex:  # a check that could not run is a failure, never a pass
        report("group %s ran to its end" % sys.argv[2], False, repr(ex))
