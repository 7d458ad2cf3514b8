#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/oauth_provider.py CERT KEY LOG EXPIRES CLIENT SECRET REFRESH: an OAuth 2
authorization server and resource server over HTTPS on 127.0.0.1, built on Debian's
python3-oauthlib (its Server: refresh_token and client_credentials grants, RFC 6749 and 6750).

- POST /token: the token endpoint. Access tokens expire in EXPIRES seconds; every refresh
  rotates the refresh token (the old one stops working). One client, CLIENT with SECRET
  (HTTP Basic or in the form), holding the refresh token REFRESH, scopes "read write".
- GET /api/... and /cc/...: the API. A valid bearer token gets 200 and a body that echoes the
  token (so a broker must scrub it); an expired or revoked one gets 401.
- /control/...: what a test does to the server, never through the broker:
  revoke-access (every access token stops working), revoke-refresh, seed?rt=VALUE (a new
  refresh token for the client), mode?m=ok|down|hang|garbage|huge|notjson|tattle|half|float (how
  /token answers; tattle: 400 repeating what it was sent; half: a refresh token rotated with
  an access token that cannot be used; float: expires_in as a real; big: tokens of
  8,003 characters), stats (counts as JSON). GET /api/tattle
  also repeats the client's secret and every live refresh token.
LOG gets one line per token request ("grant=... scope=... ok|error") and every token issued
("issued TOKEN"), so a test can look for them anywhere they must not be. Prints its port.
"""
import base64
import http.server
import json
import secrets
import sys
import threading
import time
import urllib.parse

from oauthlib.oauth2 import RequestValidator, Server

import tls_server

CERT, KEY, LOG, EXPIRES, CLIENT, SECRET, REFRESH = sys.argv[1:8]
EXPIRES = int(EXPIRES)
lock = threading.Lock()
access = {}  # token -> (expiry, scopes)
refresh = {REFRESH: ["read", "write"]}
stats = {"refresh": 0, "client_credentials": 0, "api_ok": 0, "api_401": 0, "token_requests": 0}
mode = ["ok"]


def log(line):
    with open(LOG, "a") as f:
        f.write(line + "\n")


class Client:
    client_id = CLIENT


class Validator(RequestValidator):
    def client_authentication_required(self, request, *a, **k):
        return True

    def authenticate_client(self, request, *a, **k):
        cid, sec = request.client_id, request.client_secret
        auth = request.headers.get("Authorization", "")
        if auth.startswith("Basic "):
            cid, _, sec = base64.b64decode(auth[6:]).decode().partition(":")
            cid, sec = urllib.parse.unquote_plus(cid), urllib.parse.unquote_plus(sec)
        if cid == CLIENT and sec == SECRET:
            request.client = Client()
            request.client_id = cid
            return True
        return False

    def validate_grant_type(self, client_id, grant_type, client, request, *a, **k):
        return grant_type in ("refresh_token", "client_credentials")

    def validate_refresh_token(self, refresh_token, client, request, *a, **k):
        with lock:
            return refresh_token in refresh

    def get_original_scopes(self, refresh_token, request, *a, **k):
        with lock:
            return refresh.get(refresh_token, [])

    def get_default_scopes(self, client_id, request, *a, **k):
        return ["read", "write"]

    def validate_scopes(self, client_id, scopes, client, request, *a, **k):
        return set(scopes) <= {"read", "write"}

    def save_bearer_token(self, token, request, *a, **k):
        scopes = token.get("scope", "read write").split()
        with lock:
            access[token["access_token"]] = (time.time() + EXPIRES, scopes)
            if "refresh_token" in token and request.grant_type == "refresh_token":
                refresh.pop(request.refresh_token, None)  # rotation: the old one is gone
                refresh[token["refresh_token"]] = scopes
        log("issued " + token["access_token"])
        if "refresh_token" in token:
            log("issued " + token["refresh_token"])

    def validate_bearer_token(self, token, scopes, request):
        with lock:
            got = access.get(token)
        return bool(got) and got[0] > time.time()


server = Server(Validator(), token_expires_in=EXPIRES,
                token_generator=lambda r: "at-" + secrets.token_hex(4000 if mode[0] == "big" else 16),
                refresh_token_generator=lambda r: "rt-" + secrets.token_hex(16))


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, ctype="application/json", headers=None):
        data = body.encode() if isinstance(body, str) else body
        self.send_response(status)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        for k, v in (headers or {}).items():
            if k.lower() not in ("content-type", "content-length"):
                self.send_header(k, v)
        self.end_headers()
        self.wfile.write(data)

    def body(self):
        n = int(self.headers.get("Content-Length") or 0)
        return self.rfile.read(n).decode() if n else ""

    def do_POST(self):
        body = self.body()
        if self.path != "/token":
            return self.reply(404, "{}")
        form = urllib.parse.parse_qs(body)
        grant = form.get("grant_type", ["?"])[0]
        with lock:
            stats["token_requests"] += 1
            m = mode[0]
        if m == "down":
            return self.reply(503, '{"error": "temporarily_unavailable"}')
        if m == "hang":
            time.sleep(30)
            return
        if m == "garbage":
            return self.reply(200, "\x00\xff not json at all")
        if m == "notjson":
            return self.reply(200, "[1, 2, 3]")
        if m == "tattle":  # an endpoint that repeats what it was sent, in its own words
            said = self.headers.get("Authorization", "") + " " + body
            return self.reply(400, json.dumps({"error": said, "error_description": said}))
        if m == "huge":
            pad = "x" * (200 * 1024)
            return self.reply(200, '{"access_token": "at-huge", "pad": "%s"}' % pad)
        headers, out, status = server.create_token_response(
            "https://localhost/token", "POST", body, dict(self.headers))
        ok = status == 200
        if ok and m in ("half", "float"):  # a real grant (the refresh token rotated) ...
            token = json.loads(out)
            if m == "half":  # ... whose access token cannot be used
                token["access_token"] = "not a token"
            else:  # ... whose expires_in is a JSON real
                token["expires_in"] = EXPIRES + 0.5
            out = json.dumps(token)
        if ok:
            with lock:
                stats["refresh" if grant == "refresh_token" else "client_credentials"] += 1
        log("grant=%s scope=%s %s" % (grant, form.get("scope", ["-"])[0],
                                      "ok" if ok else "error " + out))
        self.reply(status, out, headers=headers)

    def do_GET(self):
        path = urllib.parse.urlsplit(self.path).path
        if path.startswith("/control/"):
            return self.control(path[9:], urllib.parse.parse_qs(urllib.parse.urlsplit(self.path).query))
        if not (path.startswith("/api") or path.startswith("/cc")):
            return self.reply(404, "{}")
        valid, r = server.verify_request("https://localhost" + self.path, "GET", "",
                                         dict(self.headers), [])
        auth = self.headers.get("Authorization", "")
        tok = auth[7:] if auth.startswith("Bearer ") else auth
        with lock:
            stats["api_ok" if valid else "api_401"] += 1
        if not valid:
            return self.reply(401, '{"error": "invalid_token"}',
                              headers={"WWW-Authenticate": 'Bearer error="invalid_token"'})
        out = {"ok": True, "path": path, "your_token": tok}
        if path.startswith("/api/tattle"):  # an API that repeats what only the endpoint holds
            with lock:
                out["refresh_tokens"] = list(refresh)
            out["client_secret"] = SECRET
        self.reply(200, json.dumps(out))

    def control(self, what, q):
        with lock:
            if what == "revoke-access":
                access.clear()
            elif what == "revoke-refresh":
                refresh.clear()
            elif what == "seed":
                refresh[q["rt"][0]] = ["read", "write"]
            elif what == "mode":
                mode[0] = q["m"][0]
            elif what != "stats":
                return self.reply(404, "{}")
            out = json.dumps(stats)
        self.reply(200, out)


tls_server.serve(Handler, CERT, KEY)
