#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/https_files.py: a private package index for the end-to-end suites — serves a
# directory over verified TLS (Python's http.server), only to requests that carry
# "Authorization: Bearer <the token in TOKEN_FILE>" (401 otherwise), and logs each request's
# path and whether it was authorised. Prints its port once it listens.
# Usage: https_files.py --cert PEM --key KEY --dir DIR --token-file FILE --log FILE
import argparse
import functools
import http.server
import ssl

p = argparse.ArgumentParser()
for opt in ("--cert", "--key", "--dir", "--token-file", "--log"):
    p.add_argument(opt, required=True)
a = p.parse_args()
token = open(a.token_file).read().strip()
log = open(a.log, "a", buffering=1)


class Handler(http.server.SimpleHTTPRequestHandler):
    def authorised(self):
        ok = self.headers.get("Authorization") == "Bearer " + token
        log.write(f"{self.command} {self.path} {'authorised' if ok else 'refused'}\n")
        if not ok:
            self.send_error(401, "a token is needed")
        return ok

    def do_GET(self):
        if self.authorised():
            super().do_GET()

    def do_HEAD(self):
        if self.authorised():
            super().do_HEAD()

    def log_message(self, *args):
        pass


srv = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=a.dir))
ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
ctx.load_cert_chain(a.cert, a.key)
srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
print(srv.server_address[1], flush=True)
srv.serve_forever()
