# SPDX-License-Identifier: Apache-2.0
"""The Python client against a real `bulkhead serve` and real guests (run by
tests/e2e/test_serve_clients.sh): sessions pooled and cold, exact bytes, streaming, stdin,
exit codes and signals, files, archives, events, errors. Prints one line per check:
"ok - NAME", "not ok - NAME" (then "# detail" lines), "skip - NAME # REASON".
Usage: e2e.py SOCKET HOST-TMP-DIR, or e2e.py SOCKET HOST-TMP-DIR approve URL-SUFFIX: approves the
one pending approval (held by a broker the suite runs) whose url ends so."""
from __future__ import annotations

import hashlib
import io
import os
import sys
import tarfile
import threading
import time
import traceback
from typing import Callable, Dict, List, Optional

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from bulkhead import Bulkhead, BulkheadError, Session  # noqa: E402

failed = 0


def report(name: str, good: bool, *detail: object) -> None:
    global failed
    print(("ok - " if good else "not ok - ") + name)
    if not good:
        failed += 1
        for d in detail:
            for line in str(d).splitlines() or [""]:
                print("# " + line)
    sys.stdout.flush()


def check(name: str, fn: Callable[[], object]) -> None:
    """Runs fn: an assertion or exception is a failure with its detail."""
    try:
        fn()
        report(name, True)
    except Exception as e:  # noqa: BLE001 - every failure is reported, none ends the run
        report(name, False, f"{type(e).__name__}: {e}", traceback.format_exc(limit=3))


def eq(want: object, got: object, what: str = "") -> None:
    if want != got:
        w, g = repr(want), repr(got)
        raise AssertionError(f"{what} expected {w[:300]} got {g[:300]}")


def raises(status: int, fn: Callable[[], object]) -> BulkheadError:
    try:
        fn()
    except BulkheadError as e:
        if e.status != status:
            raise AssertionError(f"expected status {status}, got {e.status}: {e.message}")
        if not e.message or "\n" in e.message:
            raise AssertionError(f"the error is not one line: {e.message!r}")
        return e
    raise AssertionError(f"expected BulkheadError({status}), nothing raised")


def wait_until(what: str, cond: Callable[[], bool], seconds: float = 120) -> None:
    end = time.monotonic() + seconds
    while not cond():
        if time.monotonic() > end:
            raise AssertionError(f"gave up waiting: {what}")
        time.sleep(0.2)


ALL_BYTES = bytes(range(256)) * 4 + b"\xff\xfe\x80 not utf-8 \xc3\x28\n"


def pooled_session(b: Bulkhead) -> None:
    wait_until("a ready pool guest", lambda: b.pool().ready >= 1)
    with b.session(env={"SESSION_VAR": "from-session"}) as s:
        eq(True, s.info.pooled, "pooled")
        eq("running", s.info.state, "state")
        eq(16, len(s.id), "id length")
        eq(True, s.info.work_owned, "work_owned")
        r = s.run("echo $SESSION_VAR")
        eq((0, b"from-session\n", b""), (r.exit_code, r.stdout, r.stderr))
        work = s.info.work
        assert os.path.isdir(work), f"{work} is not a directory"
        ids = [x.id for x in b.sessions()]
        assert s.id in ids, f"{s.id} not in {ids}"
    raises(404, lambda: b.get_session(s.id))
    assert not os.path.exists(work), f"{work} is left after delete"


def pooled_scope(b: Bulkhead) -> None:
    """A scope is bound to a pooled guest when it is taken: its broker answers the guest."""
    wait_until("a ready pool guest", lambda: b.pool().ready >= 1)
    eq([(256, 1)], [(p.mem_mib, p.cpus) for p in b.pool().pools], "the pool's shape")
    with b.session(scope={"allow": []}) as s:
        eq((True, None, "private"), (s.info.pooled, s.info.pool_miss, s.info.broker))
        r = s.run("curl -s -o /dev/null -w '%{http_code}' http://example.com/")
        eq(b"403", r.stdout, "the bound broker refuses what the scope does not allow")


def cold_session(b: Bulkhead, tmp: str) -> None:
    host = os.path.join(tmp, "py-work")
    os.mkdir(host)
    with open(os.path.join(host, "from-host"), "wb") as f:
        f.write(ALL_BYTES)
    with b.session(work=host, pool=False) as s:
        eq(False, s.info.pooled, "pooled")
        eq(host, s.info.work, "work")
        eq(False, s.info.work_owned, "work_owned")
        r = s.run(["cat", "/work/from-host"])
        eq(ALL_BYTES, r.stdout, "a host file read in the guest")
        s.run("echo made-in-guest > /work/from-guest")
        info = s.delete()
        eq(("ended", "deleted"), (info.state, info.end_reason), "last state")
    with open(os.path.join(host, "from-guest"), "rb") as f:
        eq(b"made-in-guest\n", f.read(), "the guest's file on the host")


def exact_bytes(s: Session) -> None:
    eq(len(ALL_BYTES), s.put_file("all.bin", ALL_BYTES), "size")
    r = s.run("cat /work/all.bin; cat /work/all.bin >&2; exit 3")
    eq((3, ALL_BYTES, ALL_BYTES), (r.exit_code, r.stdout, r.stderr))
    r = s.run(["cat"], stdin=ALL_BYTES)
    eq(ALL_BYTES, r.stdout, "stdin_b64 through cat")
    r = s.run("cat", stdin="héllo\n")
    eq("héllo\n".encode(), r.stdout, "stdin as UTF-8 text")
    r = s.run("cat")
    eq((0, b""), (r.exit_code, r.stdout), "no stdin: end of file at once")


def large_output(s: Session) -> None:
    n = 6 * 1024 * 1024 + 5
    r = s.run(f"head -c {n} /dev/urandom > /work/big; sha256sum < /work/big >&2; cat /work/big")
    eq(0, r.exit_code, "exit")
    eq(n, len(r.stdout), "length")
    eq(r.stderr.split(b" ")[0].decode(), hashlib.sha256(r.stdout).hexdigest(), "SHA-256")
    eq(r.stdout, s.get_file("big"), "the same bytes through get_file")


def stream_order(s: Session) -> None:
    ex = s.stream("i=0; while [ $i -lt 300 ]; do echo out $i; echo err $i >&2; i=$((i+1)); done")
    out: List[bytes] = []
    err: List[bytes] = []
    for name, data in ex:
        (out if name == "stdout" else err).append(data)
    eq(0, ex.exit.status if ex.exit else None, "exit")
    eq("".join(f"out {i}\n" for i in range(300)).encode(), b"".join(out), "stdout in order")
    eq("".join(f"err {i}\n" for i in range(300)).encode(), b"".join(err), "stderr in order")


def streams_as_written(s: Session) -> None:
    # The command goes on only once the client has seen its first line: without streaming the
    # client would never see it before the end, and the command gives up (exit 9).
    s.run("rm -f /work/go")
    with s.stream("echo ready; i=0; while [ ! -e /work/go ]; do i=$((i+1));"
                  " [ $i -gt 600 ] && exit 9; sleep 0.1; done; echo done") as ex:
        seen = b""
        for name, data in ex:
            seen += data
            if seen == b"ready\n":
                s.put_file("go", b"")
        eq(b"ready\ndone\n", seen, "output")
        eq(0, ex.exit.status if ex.exit else None, "exit")


def open_stdin(s: Session) -> None:
    with s.stream("cat", stdin_open=True) as ex:
        ex.send_stdin(b"first\x00\xff")
        name, data = next(ex)
        eq(("stdout", b"first\x00\xff"), (name, data), "echoed before stdin ends")
        ex.send_stdin(b"second", eof=True)
        r = ex.wait()
        eq((0, b"second"), (r.exit_code, r.stdout))


def exits_and_signals(s: Session) -> None:
    for code in (0, 1, 42, 255):
        eq(code, s.run(f"exit {code}").exit_code, f"exit {code}")
    r = s.run("kill -TERM $$")
    eq((143, 15), (r.exit_code, r.signal), "killed by TERM")
    eq(127, s.run(["/no/such/program"]).exit_code, "a missing program")
    with s.stream("echo up; exec sleep 60") as ex:
        eq(("stdout", b"up\n"), next(ex))
        ex.signal("TERM")
        r = ex.wait()
        eq((143, 15), (r.exit_code, r.signal), "signal('TERM')")
    with s.stream("echo up; exec sleep 60") as ex:
        next(ex)
        ex.signal(9)
        eq(137, ex.wait().exit_code, "signal(9)")


def env_cwd_tty(s: Session) -> None:
    r = s.run("echo $A; pwd", env={"A": "x y"}, cwd="/tmp")
    eq(b"x y\n/tmp\n", r.stdout)
    eq(b"/work\n", s.run("pwd").stdout, "default cwd")
    r = s.run("tty", tty=True)
    assert r.stdout.startswith(b"/dev/pts/"), r.stdout
    with s.stream("echo ready; read x; stty size", tty=True, rows=24, cols=80,
                  stdin_open=True) as ex:
        seen = b""
        for _, data in ex:
            seen += data
            if b"ready" in seen and b"\n" in seen.split(b"ready", 1)[1]:
                break
        ex.resize(40, 120)
        ex.send_stdin(b"\n")
        seen += ex.wait().stdout
    assert b"40 120" in seen, seen


def files(s: Session) -> None:
    eq(19, s.put_file("run.sh", "#!/bin/sh\necho ran\n", mode=0o755), "size")
    eq(b"755\nran\n", s.run("stat -c %a /work/run.sh; /work/run.sh").stdout)
    s.put_file("plain", b"p")
    eq(b"644\n", s.run("stat -c %a /work/plain").stdout, "default mode")
    s.run("mkdir -p /work/d/e && printf 'in guest' > /work/d/e/f")
    eq(b"in guest", s.get_file("d/e/f"))
    raises(404, lambda: s.get_file("no-such-file"))
    raises(400, lambda: s.get_file("../../../../etc/passwd"))
    raises(400, lambda: s.get_file("/etc/passwd"))
    s.run("ln -sf /etc /work/out")
    raises(400, lambda: s.get_file("out/passwd"))
    raises(400, lambda: s.put_file("out/evil", b"x"))


def uploads(s: Session, tmp: str) -> None:
    data = os.urandom(8 * 1024 * 1024 + 7)
    path = os.path.join(tmp, "py-upload")
    with open(path, "wb") as f:
        f.write(data)
    with open(path, "rb") as f:  # a file: sent with its length
        eq(len(data), s.put_file("up-file", f), "size from a file")
    eq(len(data), s.put_file("up-chunked", io.BytesIO(data)), "size sent chunked")
    want = hashlib.sha256(data).hexdigest()
    r = s.run("sha256sum /work/up-file /work/up-chunked | cut -d' ' -f1")
    eq(f"{want}\n{want}\n".encode(), r.stdout, "both uploads in the guest")
    eq(data, s.get_file("up-chunked"), "read back")


def replaced(s: Session) -> None:
    # An agent writes a file, runs it, writes it anew and runs it again at once.
    s.put_file("again.sh", "echo first\n")
    eq(b"first\n", s.run("sh /work/again.sh").stdout, "the first version")
    s.put_file("again.sh", "echo second\n")
    eq(b"second\n", s.run("sh /work/again.sh").stdout, "the replaced version, run at once")


def make_tar(members: List[tarfile.TarInfo], data: Dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w", format=tarfile.PAX_FORMAT) as t:
        for m in members:
            body = data.get(m.name)
            if body is not None:
                m.size = len(body)
            t.addfile(m, io.BytesIO(body) if body is not None else None)
    return buf.getvalue()


def archives(s: Session) -> None:
    d = tarfile.TarInfo("pkg")
    d.type, d.mode = tarfile.DIRTYPE, 0o755
    f = tarfile.TarInfo("pkg/data.bin")
    f.mode = 0o600
    x = tarfile.TarInfo("pkg/tool")
    x.mode = 0o755
    ln = tarfile.TarInfo("pkg/link")
    ln.type, ln.linkname = tarfile.SYMTYPE, "data.bin"
    tar = make_tar([d, f, x, ln], {"pkg/data.bin": ALL_BYTES, "pkg/tool": b"#!/bin/sh\necho tool\n"})
    s.run("mkdir -p /work/under")
    eq(4, s.put_archive("under", tar), "entries")
    r = s.run("cat /work/under/pkg/link; /work/under/pkg/tool; stat -c %a /work/under/pkg/data.bin")
    eq(ALL_BYTES + b"tool\n600\n", r.stdout, "unpacked in the guest")
    with tarfile.open(fileobj=io.BytesIO(s.get_archive("under")), mode="r") as t:
        names = {m.name.rstrip("/").removeprefix("./") for m in t.getmembers()}
        assert {"pkg", "pkg/data.bin", "pkg/tool", "pkg/link"} <= names, names
        m = [m for m in t.getmembers() if m.name.endswith("pkg/data.bin")][0]
        got = t.extractfile(m)
        eq(ALL_BYTES, got.read() if got else None, "a file's bytes back")
        lk = [m for m in t.getmembers() if m.name.endswith("pkg/link")][0]
        eq((True, "data.bin"), (lk.issym(), lk.linkname), "the link back")
    eq(4, s.put_archive("", tar), "entries at the root")
    eq(ALL_BYTES, s.run("cat /work/pkg/data.bin").stdout, "unpacked at the root")
    with tarfile.open(fileobj=io.BytesIO(s.get_archive("")), mode="r") as t:
        names = {m.name.rstrip("/").removeprefix("./") for m in t.getmembers()}
        assert {"pkg/data.bin", "under/pkg/tool"} <= names, names
    evil = tarfile.TarInfo("../escaped")
    raises(400, lambda: s.put_archive("", make_tar([evil], {"../escaped": b"x"})))
    assert not os.path.exists(os.path.join(os.path.dirname(s.info.work), "escaped"))
    dev = tarfile.TarInfo("dev")
    dev.type = tarfile.CHRTYPE
    raises(400, lambda: s.put_archive("", make_tar([dev], {})))
    eq(b"", s.run("ls -A /work/dev 2>/dev/null").stdout, "no device made")


def concurrent(s: Session) -> None:
    results: List[Optional[bytes]] = [None] * 8

    def one(i: int) -> None:
        r = s.run(f"sleep 1; head -c 100000 /dev/zero | tr '\\0' {chr(97 + i)}; exit {i}")
        results[i] = r.stdout if r.exit_code == i else None

    ts = [threading.Thread(target=one, args=(i,)) for i in range(8)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    for i in range(8):
        eq(chr(97 + i).encode() * 100000, results[i], f"exec {i}")


def errors(b: Bulkhead, s: Session) -> None:
    e = raises(400, lambda: b.session(mem_mib=1))
    assert "mem_mib" in e.message, e.message
    raises(400, lambda: b.session(cpus=0, pool=False))
    e = raises(400, lambda: b._t.json("POST", "/v1/sessions", {"bogus": 1}))
    assert "bogus" in e.message, e.message
    raises(400, lambda: b._t.call("POST", "/v1/sessions", b"{not json", "application/json"))
    raises(404, lambda: b.get_session("0123456789abcdef"))
    try:  # an empty argv is refused before it is sent
        s.run([])
        raise AssertionError("an empty cmd was accepted")
    except ValueError:
        pass
    raises(400, lambda: s._t.json("POST", f"/v1/sessions/{s.id}/exec", {"cmd": []}))
    # Pause and resume (l1_pause.sh pauses for real under kvm): a running session cannot be
    # resumed, a body must be empty, an unknown session is 404.
    raises(409, s.resume)
    raises(400, lambda: s._t.json("POST", f"/v1/sessions/{s.id}/pause", {"x": 1}))
    raises(404, lambda: b._t.json("POST", "/v1/sessions/0123456789abcdef/pause"))
    raises(404, lambda: b.approve("no-such-approval", "test"))
    raises(404, lambda: b.deny("no-such-approval"))
    eq([], b.approvals(), "no approval pending")
    raises(405, lambda: b._t.call("DELETE", "/v1/health"))
    eq(0, _status_of(lambda: Bulkhead(socket="/nonexistent/serve.sock").health()),
       "no daemon: status 0")


def _status_of(fn: Callable[[], object]) -> int:
    try:
        fn()
    except BulkheadError as e:
        return e.status
    return -1


def ended_session(b: Bulkhead) -> None:
    s = b.session(timeout_s=1)
    try:
        wait_until("the session to time out", lambda: s.refresh().state == "ended", 60)
        eq("timed_out", s.info.end_reason, "end_reason")
        raises(409, lambda: s.run("true"))
        assert s.id in [x.id for x in b.sessions()], "an ended session stays listed"
    finally:
        s.delete()
    raises(404, lambda: s.refresh())


def events(b: Bulkhead, ids: List[str]) -> None:
    ev = Bulkhead(b.socket, timeout=30).events(since=0)
    want = {(i, t) for i in ids for t in ("session.started", "session.ended")}
    seqs: List[int] = []
    try:
        for e in ev:
            seqs.append(e.seq)
            want.discard((e.session or "", e.type))
            if e.type == "session.ended" and e.session in ids:
                assert e.raw.get("end_reason"), e.raw
            if not want:
                break
    finally:
        ev.close()
    eq(set(), want, "events seen")
    eq(sorted(seqs), seqs, "seq increases")
    # The stream's client has left: the daemon meets that when the next events come.
    with b.session():
        pass
    assert b.health().ok


def idle_events_left(b: Bulkhead) -> None:
    # A stream with nothing to replay and no event coming, left by its client: the daemon
    # finds the client gone while it waits (it looks each second) and must stay up.
    for _ in range(5):
        conn, resp = b._t.open("GET", "/v1/events")
        eq(b"\n", resp.readline(), "the first line, a heartbeat")
        resp.close()
        conn.close()
        for _ in range(15):
            assert b.health().ok
            time.sleep(0.1)


def approve_pending(b: Bulkhead, suffix: str) -> None:
    found: List[str] = []

    def pending() -> bool:
        found[:] = [a.id for a in b.approvals()
                    if a.method == "POST" and (a.url or "").endswith(suffix)]
        return bool(found)

    wait_until(f"a pending POST ...{suffix}", pending, 60)
    a = [x for x in b.approvals() if x.id == found[0]][0]
    assert a.sha256 and len(a.sha256) == 64, a
    assert a.expires > time.time(), a
    assert a.secret == "TOK", a
    b.approve(a.id, "approved by the Python client")
    assert a.id not in [x.id for x in b.approvals()], "still pending after approve"
    raises(404, lambda: b.approve(a.id))


def main() -> int:
    sock, tmp = sys.argv[1], sys.argv[2]
    b = Bulkhead(sock)
    if sys.argv[3:4] == ["approve"]:
        check("approvals(): the held request listed; approve(); used once",
              lambda: approve_pending(b, sys.argv[4]))
        return 1 if failed else 0
    check("health: ok, version", lambda: eq((True, True), (b.health().ok, bool(b.health().version))))
    check("pool: size 1", lambda: eq(1, b.pool().size))
    check("pooled session: env, listed, work removed with it", lambda: pooled_session(b))
    check("a pooled session with an inline scope, bound when taken", lambda: pooled_scope(b))
    check("cold session on a host work directory", lambda: cold_session(b, tmp))
    s = b.session()
    try:
        check("run: exact bytes (all 256 values) on stdout, stderr and stdin", lambda: exact_bytes(s))
        check("run: 6 MiB of output with a matching SHA-256", lambda: large_output(s))
        check("stream: each stream in order", lambda: stream_order(s))
        check("stream: output arrives while the command runs", lambda: streams_as_written(s))
        check("stream: stdin_open, send_stdin, eof", lambda: open_stdin(s))
        check("exit codes and signals (in the command, and sent)", lambda: exits_and_signals(s))
        check("env, cwd, tty and resize", lambda: env_cwd_tty(s))
        check("put_file/get_file: modes, 404, paths confined", lambda: files(s))
        check("put_file: 8 MiB from a file and chunked from a stream", lambda: uploads(s, tmp))
        check("put_file replacing a file the guest has read: the next command reads the new bytes",
              lambda: replaced(s))
        check("put_archive/get_archive: under a dir and at the root; escapes refused",
              lambda: archives(s))
        check("8 execs at once in one session", lambda: concurrent(s))
        check("errors raise BulkheadError with the status", lambda: errors(b, s))
    finally:
        s.delete()
    check("a timed-out session: ended, 409, listed until deleted", lambda: ended_session(b))
    check("events: started and ended for each session, in order; leaving the stream is fine",
          lambda: events(b, [s.id]))
    check("events: a client leaving an idle stream leaves the daemon up", lambda: idle_events_left(b))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
