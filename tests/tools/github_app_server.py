#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/github_app_server.py CERT KEY LOG APP_PUBKEY APP_ID INSTALLATION GITROOT: a
local server playing GitHub over HTTPS on 127.0.0.1 for a GitHub App's installation tokens, and
a git smart HTTP server for the repositories under GITROOT (NAME.git), through `git
http-backend`.

- POST /app/installations/INSTALLATION/access_tokens: the App's JWT is verified with Debian's
  python3-jwt against APP_PUBKEY (RS256, iss APP_ID, at most ten minutes); the body may narrow
  the token to "repositories" and "permissions". 201 with a new token "ghs_..." expiring in an
  hour; else 401 (bad JWT) or 404 (another installation).
- DELETE /installation/token with the token as bearer: revokes it (204).
- git over /NAME.git/...: Basic x-access-token:TOKEN, a live token whose repositories hold NAME
  (or that was not narrowed), and contents:write to push; else 401/403.
LOG gets "minted TOKEN repos=... perms=...", "revoked TOKEN", "issued TOKEN" and one line per
git request. Prints its port.
"""
import base64
import datetime
import http.server
import json
import os
import secrets
import subprocess
import sys
import threading
import time
import urllib.parse

import jwt

import tls_server

CERT, KEY, LOG, PUBKEY, APP_ID, INSTALLATION, GITROOT = sys.argv[1:8]
PUB = open(PUBKEY).read()
lock = threading.Lock()
tokens = {}  # token -> {"repos": [..] or None, "perms": {...}, "revoked": bool, "exp": t}


def log(line):
    with lock, open(LOG, "a") as f:
        f.write(line + "\n")


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body=b"", ctype="application/json", headers=()):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        if data or status != 204:
            self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in headers:
            self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        if (self.headers.get("Transfer-Encoding") or "").lower() == "chunked":
            out = b""
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if not size:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return out
                out += self.rfile.read(size)
                self.rfile.read(2)
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n) if n else b""

    def bearer(self):
        auth = self.headers.get("Authorization", "")
        for p in ("Bearer ", "token "):
            if auth.startswith(p):
                return auth[len(p):]
        return None

    def do_POST(self):
        body = self.body()
        path = urllib.parse.urlsplit(self.path).path
        if path.endswith("/access_tokens") and path.startswith("/app/installations/"):
            return self.mint(path, body)
        return self.git(path, body)

    def do_GET(self):
        self.git(urllib.parse.urlsplit(self.path).path, b"")

    def do_DELETE(self):
        self.body()
        t = self.bearer()
        with lock:
            live = t in tokens and not tokens[t]["revoked"]
            if live:
                tokens[t]["revoked"] = True
        if urllib.parse.urlsplit(self.path).path != "/installation/token" or not live:
            return self.reply(401, '{"message": "Bad credentials"}')
        log("revoked " + t)
        self.reply(204)

    def mint(self, path, body):
        try:
            claims = jwt.decode(self.bearer() or "", PUB, algorithms=["RS256"],
                                options={"require": ["iat", "exp", "iss"]})
            ok = str(claims["iss"]) == APP_ID and claims["exp"] - claims["iat"] <= 600
        except jwt.PyJWTError as e:
            log("jwt refused: %s" % e)
            ok = False
        if not ok:
            return self.reply(401, '{"message": "A JSON web token could not be decoded"}')
        if path.split("/")[3] != INSTALLATION:
            return self.reply(404, '{"message": "Not Found"}')
        ask = json.loads(body or b"{}")
        t = "ghs_" + secrets.token_hex(18)
        exp = time.time() + 3600
        with lock:
            tokens[t] = {"repos": ask.get("repositories"), "perms": ask.get("permissions") or
                         {"contents": "write"}, "revoked": False, "exp": exp}
        log("issued " + t)
        log("minted %s repos=%s perms=%s" % (t, ",".join(ask.get("repositories") or ["*"]),
                                            ",".join("%s:%s" % kv for kv in sorted(
                                                (ask.get("permissions") or {}).items()))))
        at = datetime.datetime.fromtimestamp(exp, datetime.timezone.utc)
        self.reply(201, json.dumps({"token": t, "expires_at": at.strftime("%Y-%m-%dT%H:%M:%SZ"),
                                    "permissions": tokens[t]["perms"]}))

    def git(self, path, body):
        parts = path.lstrip("/").split("/", 1)
        name = parts[0][:-4] if parts[0].endswith(".git") else None
        auth = self.headers.get("Authorization", "")
        tok = None
        if auth.startswith("Basic "):
            user, _, tok = base64.b64decode(auth[6:]).decode().partition(":")
        with lock:
            info = tokens.get(tok)
            live = info and not info["revoked"] and info["exp"] > time.time()
            allowed = live and (info["repos"] is None or name in info["repos"])
            push = "receive-pack" in self.path
            can = allowed and (not push or info["perms"].get("contents") == "write")
        log("git %s %s %s" % (self.command, self.path, "ok" if can else "refused"))
        if name is None:
            return self.reply(404, "{}")
        if not live:
            return self.reply(401, "", "text/plain", [("WWW-Authenticate", 'Basic realm="git"')])
        if not can:
            return self.reply(403, "not allowed for this token", "text/plain")
        q = urllib.parse.urlsplit(self.path).query
        env = dict(os.environ, GIT_PROJECT_ROOT=GITROOT, GIT_HTTP_EXPORT_ALL="1",
                   PATH_INFO=path, QUERY_STRING=q, REQUEST_METHOD=self.command,
                   CONTENT_TYPE=self.headers.get("Content-Type", ""),
                   CONTENT_LENGTH=str(len(body)), REMOTE_USER="x-access-token",
                   REMOTE_ADDR="127.0.0.1",
                   HTTP_CONTENT_ENCODING=self.headers.get("Content-Encoding", ""),
                   GIT_PROTOCOL=self.headers.get("Git-Protocol", ""))
        out = subprocess.run(["git", "http-backend"], input=body, env=env,
                             capture_output=True).stdout
        head, _, rest = out.partition(b"\r\n\r\n")
        status, hdrs = 200, []
        for line in head.decode().split("\r\n"):
            k, _, v = line.partition(": ")
            if k.lower() == "status":
                status = int(v.split()[0])
            elif k and k.lower() not in ("content-length",):
                hdrs.append((k, v))
        ctype = dict((k.lower(), v) for k, v in hdrs).get("content-type", "text/plain")
        self.reply(status, rest, ctype, [h for h in hdrs if h[0].lower() != "content-type"])


tls_server.serve(Handler, CERT, KEY)
