#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/openapi_check.py: checks docs/openapi.json against docs/API.md and against what a
running `bulkhead serve` answers. --static: every `METHOD /v1/...` the prose names is in the
spec, every $ref resolves, and the prose's example lines validate. With a socket: every
documented path and method is asked (and error answers too: unknown session, exec, file and
approval, malformed JSON, unknown fields, numbers out of range, a body over 1 MiB, paths
leaving the work directory, a wrong method, an ended session), and each answer's status,
Content-Type and body (each NDJSON line) must be as documented. Prints "ok - ..." /
"not ok - ..." lines with "# " details. Exit 1 if any check failed.
With --approval, one approval is pending (a broker the caller runs holds a request): the list
must show it as documented, and approving it must answer 204.
Usage: openapi_check.py --static SPEC API.md | openapi_check.py SPEC SOCKET [--approval]"""
from __future__ import annotations

import io
import json
import os
import re
import sys
import tarfile
from typing import Any, Dict, List

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from openapi_lib import Checker, Stream, exec_stream, finish_exec, wait_for  # noqa: E402

S = "/v1/sessions/{id}"
NOID = "0123456789abcdef"


def static(spec: Any, prose: str) -> int:
    c = Checker(spec, "")
    refs = re.findall(r'"\$ref": "([^"]+)"', json.dumps(spec))
    bad = []
    for r in sorted(set(refs)):
        try:
            c.schema.resolve({"$ref": r})
        except KeyError:
            bad.append(r)
    c.report(f"every $ref in the spec resolves ({len(set(refs))})", [f"unresolved: {r}" for r in bad])
    named = set(re.findall(r"`(GET|POST|PUT|DELETE) (/v1/[^`?\[\s]*)", prose))
    missing = []
    for method, path in sorted(named):
        segs = path.rstrip("/").split("/")
        if not any(method.lower() in item and _same(segs, t.rstrip("/").split("/"))
                   for t, item in spec["paths"].items()):
            missing.append(f"{method} {path}")
    c.report(f"every `METHOD /v1/...` in docs/API.md is in the spec ({len(named)})",
             [f"not in the spec: {m}" for m in missing])
    frame = {"$ref": "#/components/schemas/ExecFrame"}
    event = {"$ref": "#/components/schemas/Event"}
    goods: List[Any] = [(frame, {"exec": "3f2a"}), (frame, {"stdout": "aGVsbG8K"}),
                        (frame, {"stderr": ""}), (frame, {"exit": {"code": 0, "signal": 0, "status": 0}}),
                        (frame, {"exit": {"code": None, "signal": 15, "status": 143}}),
                        (frame, {"error": "the guest went away"}),
                        (event, {"seq": 12, "time": 1764620000.5, "type": "session.started",
                                 "session": "3f2a3f2a3f2a3f2a", "pooled": True})]
    errs = [f"{v}: {c.schema.errors(s, v)}" for s, v in goods if c.schema.errors(s, v)]
    c.report("the prose's example frames and event are valid", errs)
    bads: List[Any] = [(frame, {"stdout": "not base64!"}), (frame, {"exec": "x", "stdout": ""}),
                       (frame, {"exit": {"code": 0}}), (event, {"seq": 1, "time": 0, "type": "nope"}),
                       ({"$ref": "#/components/schemas/SessionCreate"}, {"bogus": 1}),
                       ({"$ref": "#/components/schemas/SessionCreate"}, {"mem_mib": 63}),
                       ({"$ref": "#/components/schemas/SessionCreate"}, {"timeout_s": 0}),
                       ({"$ref": "#/components/schemas/ExecRequest"}, {"cmd": []}),
                       ({"$ref": "#/components/schemas/Error"}, {"error": "x", "more": 1})]
    errs = [f"accepted: {v}" for s, v in bads if not c.schema.errors(s, v)]
    c.report("bad frames, events and requests are invalid by the spec", errs)
    return 1 if c.failed else 0


def _same(a: List[str], b: List[str]) -> bool:
    return len(a) == len(b) and all(bool(x == y or (x.startswith("{") and y.startswith("{")))
                                    for x, y in zip(a, b))


def tar_of(entries: Dict[str, bytes], dirs: List[str] = []) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as t:
        for d in dirs:
            ti = tarfile.TarInfo(d)
            ti.type, ti.mode = tarfile.DIRTYPE, 0o755
            t.addfile(ti)
        for name, data in entries.items():
            ti = tarfile.TarInfo(name)
            ti.size = len(data)
            t.addfile(ti, io.BytesIO(data))
    return buf.getvalue()


def sessions(c: Checker) -> List[str]:
    c.ask_json("health", "GET", "/v1/health", "/v1/health", 200)
    c.ask_json("the pool", "GET", "/v1/pool", "/v1/pool", 200)
    wait_for("a ready pool guest", lambda: int(c.peek("/v1/pool").get("ready", 0)) >= 1)
    a = c.ask_json("a pooled session", "POST", "/v1/sessions", "/v1/sessions", 201, {}) or {}
    b = c.ask_json("a cold one that times out", "POST", "/v1/sessions", "/v1/sessions", 201,
                   {"pool": False, "timeout_s": 1, "env": {"A": "b"}}) or {}
    ids = [x["id"] for x in (a, b) if isinstance(x.get("id"), str)]
    c.ask_json("list", "GET", "/v1/sessions", "/v1/sessions", 200)
    for i in ids:
        c.ask_json("get", "GET", S, f"/v1/sessions/{i}", 200)
    return ids


def execs(c: Checker, sid: str) -> None:
    st = exec_stream(c, sid, "output and exit 3", {"cmd": ["sh", "-c", "printf out; printf err >&2; exit 3"]})
    out, ex = finish_exec(st)
    if (out, (ex or {}).get("status")) != (b"out", 3):
        st.errs.append(f"stdout {out!r}, exit {ex!r}")
    st.close()
    st = exec_stream(c, sid, "stdin_open and /stdin", {"cmd": ["cat"], "stdin_open": True})
    x = (st.lines[0] if st.lines else {}).get("exec", "none")
    c.ask("stdin then eof", "POST", "/v1/execs/{exec}/stdin", f"/v1/execs/{x}/stdin?eof=1", 204, b"hi",
          "application/octet-stream")
    out, ex = finish_exec(st)
    if out != b"hi":
        st.errs.append(f"stdout {out!r}")
    st.close()
    st = exec_stream(c, sid, "a signal", {"cmd": ["sh", "-c", "echo up; exec sleep 60"]})
    st.line()
    x = (st.lines[0] if st.lines else {}).get("exec", "none")
    c.ask_json("an unknown signal name", "POST", "/v1/execs/{exec}/signal", f"/v1/execs/{x}/signal", 400,
               {"signal": "NOSUCHSIGNAL"})
    c.ask_json("TERM", "POST", "/v1/execs/{exec}/signal", f"/v1/execs/{x}/signal", 204, {"signal": "TERM"})
    out, ex = finish_exec(st)
    if (ex or {}).get("signal") != 15:
        st.errs.append(f"exit {ex!r}, expected signal 15")
    st.close()
    st = exec_stream(c, sid, "resize on a tty", {"cmd": ["sh", "-c", "read x; stty size"], "tty": True,
                                                "rows": 24, "cols": 80, "stdin_open": True})
    x = (st.lines[0] if st.lines else {}).get("exec", "none")
    c.ask_json("rows out of range", "POST", "/v1/execs/{exec}/resize", f"/v1/execs/{x}/resize", 400,
               {"rows": 0, "cols": 80}, bad=True)
    c.ask_json("40x120", "POST", "/v1/execs/{exec}/resize", f"/v1/execs/{x}/resize", 204, {"rows": 40, "cols": 120})
    c.ask("a line to read", "POST", "/v1/execs/{exec}/stdin", f"/v1/execs/{x}/stdin", 204, b"\n",
          "application/octet-stream")
    out, ex = finish_exec(st)
    if b"40 120" not in out:
        st.errs.append(f"stdout {out!r}, expected the new size")
    st.close()


def files(c: Checker, sid: str) -> None:
    F, A, R = S + "/files/{path}", S + "/archive/{dir}", S + "/archive/"
    base = f"/v1/sessions/{sid}"
    c.ask("a file", "PUT", F, f"{base}/files/a.txt", 201, b"\x00\xffhello", "application/octet-stream")
    c.ask("mode 0755", "PUT", F, f"{base}/files/x.sh?mode=0755", 201, b"#!/bin/sh\n", "application/octet-stream")
    st, data = c.ask("read it back", "GET", F, f"{base}/files/a.txt", 200)
    if st == 200 and data != b"\x00\xffhello":
        c.report("the bytes read back are the bytes written", [f"got {data!r}"])
    c.ask("a missing file", "GET", F, f"{base}/files/no-such-file", 404)
    c.ask("a path out of the work directory", "GET", F, f"{base}/files/../../../etc/passwd", 400)
    c.ask("an archive at the root", "PUT", R, f"{base}/archive/", 201, tar_of({"sub/f": b"1"}, ["sub"]),
          "application/x-tar")
    c.ask("an archive under a dir", "PUT", A, f"{base}/archive/sub", 201, tar_of({"g": b"2"}), "application/x-tar")
    c.ask("a directory is not a file", "GET", F, f"{base}/files/sub", 409)
    c.ask("a file in a missing directory", "PUT", F, f"{base}/files/no-such-dir/f", 404, b"x",
          "application/octet-stream")
    c.ask("the root as a tar", "GET", R, f"{base}/archive/", 200)
    c.ask("a dir as a tar", "GET", A, f"{base}/archive/sub", 200)
    c.ask("an entry leaving the work directory", "PUT", R, f"{base}/archive/", 400,
          tar_of({"../escaped": b"x"}), "application/x-tar")
    ln = exec_stream(c, sid, "a symbolic link out", {"cmd": ["ln", "-s", "/", "/work/esc"]})
    finish_exec(ln)
    ln.close()
    c.ask("a path through a symbolic link out", "GET", F, f"{base}/files/esc/etc/passwd", 400)


def approval(c: Checker) -> None:
    """The pending approval the caller arranged: listed as documented, then approved."""
    A = "/v1/approvals"
    wait_for("a pending approval", lambda: bool(c.peek(A).get("approvals")), 60)
    got = c.ask_json("one pending", "GET", A, A, 200) or {}
    items = got.get("approvals") or [{}]
    if not items[0].get("id"):
        c.report("the pending approval is listed", [f"listed: {got!r}"])
        return
    i = items[0]["id"]
    c.ask_json("approve it", "POST", A + "/{id}/approve", f"{A}/{i}/approve", 204, {"reason": "openapi_check"})
    c.ask_json("approve it again", "POST", A + "/{id}/approve", f"{A}/{i}/approve", 404, {})


def errors(c: Checker, sid: str) -> None:
    ES, X = "/v1/sessions", "/v1/sessions/{id}/exec"
    c.ask_json("an unknown session", "GET", S, f"/v1/sessions/{NOID}", 404)
    c.ask_json("delete an unknown session", "DELETE", S, f"/v1/sessions/{NOID}", 404)
    c.ask_json("an unknown field", "POST", ES, ES, 400, {"bogus": 1}, bad=True)
    c.ask_json("mem_mib out of range", "POST", ES, ES, 400, {"mem_mib": 1}, bad=True)
    c.ask_json("cpus of the wrong type", "POST", ES, ES, 400, {"cpus": "2"}, bad=True)
    c.ask_json("timeout_s 0", "POST", ES, ES, 400, {"timeout_s": 0}, bad=True)
    c.ask_json("env values are strings", "POST", ES, ES, 400, {"env": {"A": 1}}, bad=True)
    c.ask("malformed JSON", "POST", ES, ES, 400, b'{"image": ', "application/json")
    c.ask("a JSON body over 1 MiB", "POST", ES, ES, 413,
          json.dumps({"env": {"A": "x" * (1 << 20)}}).encode(), "application/json")
    c.ask_json("an empty cmd", "POST", X, f"/v1/sessions/{sid}/exec", 400, {"cmd": []}, bad=True)
    c.ask_json("cmd as a string", "POST", X, f"/v1/sessions/{sid}/exec", 400, {"cmd": "true"}, bad=True)
    c.ask_json("an unknown exec field", "POST", X, f"/v1/sessions/{sid}/exec", 400,
               {"cmd": ["true"], "bogus": True}, bad=True)
    c.ask_json("exec in an unknown session", "POST", X, f"/v1/sessions/{NOID}/exec", 404, {"cmd": ["true"]})
    for op, obj in (("stdin", None), ("signal", {"signal": "TERM"}), ("resize", {"rows": 1, "cols": 1})):
        t = "/v1/execs/{exec}/" + op
        if obj is None:
            c.ask("an unknown exec", "POST", t, "/v1/execs/nosuchexec/stdin", 404, b"x", "application/octet-stream")
        else:
            c.ask_json("an unknown exec", "POST", t, f"/v1/execs/nosuchexec/{op}", 404, obj)
    P, R = "/v1/sessions/{id}/pause", "/v1/sessions/{id}/resume"
    c.ask_json("pause an unknown session", "POST", P, f"/v1/sessions/{NOID}/pause", 404, {})
    c.ask_json("a pause with a body", "POST", P, f"/v1/sessions/{sid}/pause", 400, {"x": 1}, bad=True)
    c.ask_json("resume a running session", "POST", R, f"/v1/sessions/{sid}/resume", 409, {})
    c.ask_json("list approvals", "GET", "/v1/approvals", "/v1/approvals", 200)
    c.ask_json("approve an unknown one", "POST", "/v1/approvals/{id}/approve", "/v1/approvals/nosuch/approve", 404,
               {"reason": "test"})
    c.ask_json("deny an unknown one", "POST", "/v1/approvals/{id}/deny", "/v1/approvals/nosuch/deny", 404, {})
    c.ask("since is a number", "GET", "/v1/events", "/v1/events?since=abc", 400)
    c.ask("a wrong method", "DELETE", "/v1/health", "/v1/health", 405)
    c.ask("a wrong method", "PUT", "/v1/sessions", "/v1/sessions", 405, b"{}", "application/json")
    c.ask("a wrong method", "POST", "/v1/pool", "/v1/pool", 405, b"{}", "application/json")
    c.ask("an unknown path", "GET", None, "/v1/nosuchthing", 404)


def lifecycle(c: Checker, ids: List[str]) -> None:
    if len(ids) < 2:
        return
    if wait_for("the session with timeout_s 1 to end",
                lambda: c.peek(f"/v1/sessions/{ids[1]}").get("state") == "ended", 60):
        c.ask_json("exec in an ended session", "POST", "/v1/sessions/{id}/exec", f"/v1/sessions/{ids[1]}/exec",
                   409, {"cmd": ["true"]})
    ev = Stream(c, "replayed since 0 up to the sessions' starts", "/v1/events", "/v1/events?since=0", None,
                "GET", timeout=30)
    want = set(ids)
    while want:
        e = ev.line()
        if e is None:
            ev.errs.append(f"no session.started for {sorted(want)}")
            break
        if e.get("type") == "session.started":
            want.discard(e.get("session"))
    ev.close()
    for i in ids:
        c.ask_json("delete", "DELETE", S, f"/v1/sessions/{i}", 200)
        c.ask_json("deleted", "GET", S, f"/v1/sessions/{i}", 404)


def live(spec: Any, sock: str, with_approval: bool) -> int:
    c = Checker(spec, sock)
    if with_approval:
        approval(c)
    ids = sessions(c)
    if ids:
        execs(c, ids[0])
        files(c, ids[0])
        errors(c, ids[0])
    lifecycle(c, ids)
    asked = {(t, m) for t, m, _ in c.seen}
    missing = [f"{m.upper()} {t}" for t, item in spec["paths"].items() for m in item
               if m in ("get", "put", "post", "delete") and (t, m) not in asked]
    c.report(f"every documented operation was asked ({len(asked)})", [f"never asked: {m}" for m in missing])
    ok = sorted(f"{m.upper()} {t} {s}" for t, m, s in c.seen if s < 300)
    print(f"# success answers seen: {len(ok)}")
    return 1 if c.failed else 0


def main() -> int:
    if len(sys.argv) == 4 and sys.argv[1] == "--static":
        with open(sys.argv[2]) as f, open(sys.argv[3]) as g:
            return static(json.load(f), g.read())
    if len(sys.argv) not in (3, 4) or sys.argv[3:] not in ([], ["--approval"]):
        print(__doc__, file=sys.stderr)
        return 2
    with open(sys.argv[1]) as f:
        return live(json.load(f), sys.argv[2], sys.argv[3:] == ["--approval"])


if __name__ == "__main__":
    sys.exit(main())
