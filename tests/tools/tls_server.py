# SPDX-License-Identifier: Apache-2.0
"""tests/tools/tls_server.py: what the tools' local HTTPS servers share: serve(HANDLER, CERT,
KEY) runs an http.server HANDLER on 127.0.0.1 with TLS, a thread per connection, prints the port
on stdout and serves for ever. A client gone mid-request (the tests make some) is no error."""
import http.server
import socketserver
import ssl


class Server(socketserver.ThreadingMixIn, http.server.HTTPServer):
    daemon_threads = True

    def handle_error(self, request, client_address):
        pass


def serve(handler, cert, key):
    srv = Server(("127.0.0.1", 0), handler)
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    srv.socket = ctx.wrap_socket(srv.socket, server_side=True)
    print(srv.server_address[1], flush=True)
    srv.serve_forever()
