# SPDX-License-Identifier: Apache-2.0
"""tests/tools/openapi_lib.py: the parts of openapi_check.py that know OpenAPI: a validator of
the OpenAPI 3.0 schema subset docs/openapi.json uses, and a checker that sends a request to
the daemon and checks its answer (status documented for the operation, the documented
Content-Type, the body or each NDJSON line valid against the documented schema). Standard
library only."""
from __future__ import annotations

import base64
import binascii
import http.client
import io
import json
import re
import socket
import sys
import tarfile
import time
from typing import Any, Callable, Dict, List, Optional, Set, Tuple

Json = Any


class UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: float = 120) -> None:
        super().__init__("localhost", timeout=timeout)
        self.unix_path = path

    def connect(self) -> None:
        s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        s.settimeout(self.timeout)
        s.connect(self.unix_path)
        self.sock = s


class Schema:
    """A validator for the OpenAPI 3.0 schema objects of one spec ($ref resolved in it)."""

    def __init__(self, spec: Json) -> None:
        self.spec = spec

    def resolve(self, s: Json) -> Json:
        while isinstance(s, dict) and "$ref" in s:
            node = self.spec
            for part in s["$ref"].lstrip("#/").split("/"):
                node = node[part]
            s = node
        return s

    def errors(self, s: Json, v: Json, at: str = "$") -> List[str]:
        s = self.resolve(s)
        if v is None:
            if s.get("nullable"):
                return []
            if "type" in s or "enum" in s or "oneOf" in s:
                return [f"{at}: null is not allowed"]
        for key in ("oneOf", "anyOf"):
            if key in s:
                n = sum(1 for sub in s[key] if not self.errors(sub, v, at))
                if (key == "oneOf" and n != 1) or n == 0:
                    return [f"{at}: matches {n} of the {key} choices"]
        for sub in s.get("allOf", []):
            errs = self.errors(sub, v, at)
            if errs:
                return errs
        t = s.get("type")
        if t and not _is_type(t, v):
            return [f"{at}: {type(v).__name__} {json.dumps(v)[:80]} is not {t}"]
        if "enum" in s and v not in s["enum"]:
            return [f"{at}: {json.dumps(v)[:80]} is not one of {s['enum']}"]
        if isinstance(v, str):
            return self._string(s, v, at)
        if isinstance(v, (int, float)) and not isinstance(v, bool):
            return self._number(s, v, at)
        if isinstance(v, list):
            errs = [f"{at}: fewer than {s['minItems']} items"] if len(v) < s.get("minItems", 0) else []
            for i, item in enumerate(v):
                errs += self.errors(s.get("items", {}), item, f"{at}[{i}]")
            return errs
        if isinstance(v, dict):
            return self._object(s, v, at)
        return []

    def _string(self, s: Json, v: str, at: str) -> List[str]:
        errs = []
        if len(v) < s.get("minLength", 0):
            errs.append(f"{at}: shorter than {s['minLength']}")
        if "pattern" in s and not re.search(s["pattern"], v):
            errs.append(f"{at}: {v[:80]!r} does not match {s['pattern']}")
        if s.get("format") == "byte":
            try:
                base64.b64decode(v, validate=True)
            except (binascii.Error, ValueError):
                errs.append(f"{at}: not base64")
        return errs

    def _number(self, s: Json, v: float, at: str) -> List[str]:
        lo, hi = s.get("minimum"), s.get("maximum")
        if lo is not None and (v < lo or (s.get("exclusiveMinimum") and v == lo)):
            return [f"{at}: {v} is below the minimum {lo}"]
        if hi is not None and (v > hi or (s.get("exclusiveMaximum") and v == hi)):
            return [f"{at}: {v} is above the maximum {hi}"]
        return []

    def _object(self, s: Json, v: Dict[str, Json], at: str) -> List[str]:
        errs = [f"{at}: no {k!r}" for k in s.get("required", []) if k not in v]
        props = s.get("properties", {})
        extra = s.get("additionalProperties", True)
        for k, item in v.items():
            if k in props:
                errs += self.errors(props[k], item, f"{at}.{k}")
            elif extra is False:
                errs.append(f"{at}: unknown field {k!r}")
            elif isinstance(extra, dict):
                errs += self.errors(extra, item, f"{at}.{k}")
        return errs


def _is_type(t: str, v: Json) -> bool:
    if t == "integer":
        return isinstance(v, int) and not isinstance(v, bool)
    if t == "number":
        return isinstance(v, (int, float)) and not isinstance(v, bool)
    return isinstance(v, {"string": str, "boolean": bool, "object": dict, "array": list}[t])


class Checker:
    """Sends requests, checks each answer against the spec, reports, and keeps coverage."""

    def __init__(self, spec: Json, sock: str) -> None:
        self.spec = spec
        self.schema = Schema(spec)
        self.sock = sock
        self.failed = 0
        self.seen: Set[Tuple[str, str, int]] = set()

    def report(self, name: str, errs: List[str]) -> bool:
        print(("not ok - " if errs else "ok - ") + name)
        for e in errs:
            print("# " + e)
        sys.stdout.flush()
        self.failed += bool(errs)
        return not errs

    def op(self, template: str, method: str) -> Json:
        return self.spec["paths"][template][method.lower()]

    def request_errors(self, template: str, method: str, body: Json) -> List[str]:
        """The spec's own verdict on a JSON request body."""
        rb = self.schema.resolve(self.op(template, method).get("requestBody", {}))
        s = rb.get("content", {}).get("application/json", {}).get("schema")
        return self.schema.errors(s, body) if s else ["the operation takes no JSON body"]

    def send(self, method: str, url: str, body: Optional[bytes], ctype: Optional[str],
             timeout: float = 120) -> Tuple[UnixConnection, http.client.HTTPResponse]:
        conn = UnixConnection(self.sock, timeout)
        headers = {"Content-Length": str(len(body or b""))}
        if ctype:
            headers["Content-Type"] = ctype
        conn.request(method, url, body=body, headers=headers)
        return conn, conn.getresponse()

    def peek(self, url: str) -> Dict[str, Json]:
        """A GET whose answer is not checked (polling); {} when it is not a JSON object."""
        try:
            conn, resp = self.send("GET", url, None, None)
            data = resp.read()
            conn.close()
            obj = json.loads(data)
            return obj if isinstance(obj, dict) else {}
        except (OSError, http.client.HTTPException, ValueError):
            return {}

    def expect(self, template: Optional[str], method: str, status: int,
               resp: http.client.HTTPResponse) -> Tuple[List[str], Optional[str]]:
        """Status and Content-Type against the operation (template None: a path or method the
        spec does not list, whose answer must be an error). Returns (errors, media type)."""
        errs: List[str] = []
        if resp.status != status:
            errs.append(f"status {resp.status}, expected {status}")
        if template is None or method.lower() not in self.spec["paths"].get(template, {}):
            doc: Json = {"content": {"application/json": {"schema": {"$ref": "#/components/schemas/Error"}}}}
            if resp.status < 400:
                errs.append(f"status {resp.status} for an undocumented path or method")
        else:
            self.seen.add((template, method.lower(), resp.status))
            responses = self.op(template, method)["responses"]
            if str(resp.status) not in responses:
                errs.append(f"status {resp.status} is not documented for {method} {template}")
                return errs, None
            doc = self.schema.resolve(responses[str(resp.status)])
        content = doc.get("content")
        if not content:
            return errs, None
        got = (resp.getheader("Content-Type") or "").split(";")[0].strip().lower()
        if got not in content:
            errs.append(f"Content-Type {got!r}, documented: {sorted(content)}")
            return errs, None
        return errs, got

    def body_errors(self, template: Optional[str], method: str, status: int, media: Optional[str],
                    data: bytes) -> List[str]:
        if media is None:
            return [f"a body of {len(data)} bytes where none is documented"] if data else []
        schema = self._schema_of(template, method, status, media)
        if media == "application/json":
            try:
                return self.schema.errors(schema, json.loads(data))
            except ValueError as e:
                return [f"the body is not JSON ({e}): {data[:200]!r}"]
        if media == "application/x-tar":
            try:
                with tarfile.open(fileobj=io.BytesIO(data), mode="r:") as t:
                    t.getmembers()
            except tarfile.TarError as e:
                return [f"the body is not a tar stream: {e}"]
        return []

    def _schema_of(self, template: Optional[str], method: str, status: int, media: str) -> Json:
        if template is None or method.lower() not in self.spec["paths"].get(template, {}):
            return {"$ref": "#/components/schemas/Error"}
        doc = self.schema.resolve(self.op(template, method)["responses"][str(status)])
        return doc["content"][media].get("schema", {})

    def ask(self, name: str, method: str, template: Optional[str], url: str, status: int,
            body: Optional[bytes] = None, ctype: Optional[str] = None,
            bad_json: Json = None) -> Tuple[int, bytes]:
        """One whole request, checked and reported; bad_json: the JSON sent, which the spec's
        request schema must refuse as the daemon does."""
        errs: List[str] = []
        if bad_json is not None and template and not self.request_errors(template, method, bad_json):
            errs.append("the spec's request schema accepts this body")
        try:
            conn, resp = self.send(method, url, body, ctype)
            data = resp.read()
            conn.close()
        except (OSError, http.client.HTTPException) as e:
            self.report(f"{method} {url} -> {status}: {name}", [f"no answer: {e}"])
            return 0, b""
        e2, media = self.expect(template, method, status, resp)
        errs += e2
        if resp.status == status:
            errs += self.body_errors(template, method, resp.status, media, data)
        self.report(f"{method} {url} -> {status}: {name}", errs)
        return resp.status, data

    def ask_json(self, name: str, method: str, template: str, url: str, status: int,
                 obj: Json = None, bad: bool = False) -> Json:
        """A JSON request (obj: a good body unless bad), checked; the parsed answer or None."""
        errs = [] if obj is None or bad else self.request_errors(template, method, obj)
        if errs:
            self.report(f"the spec accepts the body of {method} {url}: {name}", errs)
        body = None if obj is None else json.dumps(obj).encode()
        st, data = self.ask(name, method, template, url, status, body,
                            "application/json" if body is not None else None,
                            bad_json=obj if bad else None)
        try:
            return json.loads(data) if st == status and data else None
        except ValueError:
            return None


class Stream:
    """A checked NDJSON answer read line by line (exec frames, events)."""

    def __init__(self, c: Checker, name: str, template: str, url: str, body: Optional[bytes],
                 method: str = "POST", timeout: float = 120) -> None:
        self.c, self.name, self.template, self.method = c, name, template, method
        self.errs: List[str] = []
        self.conn, self.resp = c.send(method, url, body, "application/json" if body else None, timeout)
        e, self.media = c.expect(template, method, 200, self.resp)
        self.errs += e
        self.schema = c._schema_of(template, method, 200, "application/x-ndjson")
        self.lines: List[Json] = []

    def line(self) -> Optional[Json]:
        if self.resp.status != 200 or self.media is None:
            return None
        try:
            raw = self.resp.readline()
        except (OSError, http.client.HTTPException) as e:
            self.errs.append(f"the stream broke: {e}")
            return None
        if not raw:
            return None
        if not raw.strip():
            return self.line()  # a heartbeat
        try:
            obj = json.loads(raw)
        except ValueError:
            self.errs.append(f"line {len(self.lines) + 1} is not JSON: {raw[:200]!r}")
            return None
        self.errs += [f"line {len(self.lines) + 1}: {e}" for e in self.c.schema.errors(self.schema, obj)]
        self.lines.append(obj)
        return obj

    def close(self) -> bool:
        self.resp.close()
        self.conn.close()
        return self.c.report(f"{self.method} {self.template} -> 200 NDJSON: {self.name}", self.errs)


def exec_stream(c: Checker, sid: str, name: str, req: Json) -> Stream:
    errs = c.request_errors("/v1/sessions/{id}/exec", "POST", req)
    if errs:
        c.report(f"the spec accepts the exec request: {name}", errs)
    st = Stream(c, name, "/v1/sessions/{id}/exec", f"/v1/sessions/{sid}/exec", json.dumps(req).encode())
    first = st.line()
    if not (isinstance(first, dict) and "exec" in first):
        st.errs.append(f"the first frame is not the exec's id: {first!r}")
    return st


def finish_exec(st: Stream) -> Tuple[bytes, Json]:
    """Reads an exec to its end: (stdout, the exit object), checking the frame order."""
    out = b""
    last: Json = None
    while True:
        f = st.line()
        if f is None:
            break
        if last is not None:
            st.errs.append(f"a frame after the last one: {f!r}")
        if "stdout" in f:
            out += base64.b64decode(f["stdout"])
        elif "exit" in f or "error" in f:
            last = f
        elif "exec" in f:
            st.errs.append("a second exec id frame")
    if last is None:
        st.errs.append("the stream ended without an exit or error frame")
    return out, (last or {}).get("exit")


def wait_for(what: str, cond: Callable[[], bool], seconds: float = 120) -> bool:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.25)
    print(f"# gave up waiting: {what}")
    return False
