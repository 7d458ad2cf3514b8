#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/keepalive_client.py SOCK URL CONTROL: one kept-alive connection to a broker's
session socket SOCK; for each line read from the fifo CONTROL ("go"), one GET of URL (absolute
form, as a proxy takes it) on that same connection, its status line printed and flushed. Ends
at the end of CONTROL or when the broker closes the connection ("closed")."""
import socket
import sys

sock, url, control = sys.argv[1], sys.argv[2], sys.argv[3]
host = url.split("/")[2]
s = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
s.connect(sock)
f = s.makefile("rb")
with open(control) as ctl:
    for _ in ctl:
        s.sendall(("GET %s HTTP/1.1\r\nHost: %s\r\n\r\n" % (url, host)).encode())
        status = f.readline()
        if not status:
            print("closed", flush=True)
            break
        length, chunked = 0, False
        while True:
            line = f.readline()
            if line in (b"\r\n", b"\n", b""):
                break
            k, _, v = line.decode("latin-1").partition(":")
            if k.strip().lower() == "content-length":
                length = int(v.strip())
            if k.strip().lower() == "transfer-encoding" and "chunked" in v.lower():
                chunked = True
        while chunked:  # chunks up to the last, then its (empty) trailer
            n = int(f.readline().split(b";")[0], 16)
            f.read(n + 2) if n else None
            if not n:
                while f.readline() not in (b"\r\n", b"\n", b""):
                    pass
                break
        f.read(length)
        print(status.decode("latin-1").strip(), flush=True)
