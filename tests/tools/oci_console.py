#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/oci_console.py SOCKET INPUT: the caller's end of an OCI --console-socket, as
conmon holds it. Listens on SOCKET, takes the terminal's master side that the runtime sends
(SCM_RIGHTS), types INPUT (with \\r for Enter) once `ready` is printed on the terminal (or
after 20 s), and copies everything the terminal shows to stdout until the other side closes
it (or 90 s pass). Prints "console: NAME" first: the terminal's name the runtime sent."""
import os
import select
import socket
import sys
import time


def main():
    path, text = sys.argv[1], sys.argv[2].replace("\\r", "\r").encode()
    srv = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    srv.bind(path)
    srv.listen(1)
    srv.settimeout(90)
    conn, _ = srv.accept()
    msg, fds, _, _ = socket.recv_fds(conn, 256, 1)
    if len(fds) != 1:
        sys.exit("console: no descriptor received")
    print("console: %s" % msg.decode(errors="replace"), flush=True)
    master = fds[0]
    seen, typed = b"", False
    start = time.monotonic()
    while time.monotonic() - start < 90:
        if not typed and (b"ready" in seen or time.monotonic() - start > 20):
            os.write(master, text)
            typed = True
        r, _, _ = select.select([master], [], [], 0.2)
        if not r:
            continue
        try:
            data = os.read(master, 4096)
        except OSError:
            break  # EIO: every holder of the terminal's other side is gone
        if not data:
            break
        seen += data
        sys.stdout.buffer.write(data)
        sys.stdout.flush()


if __name__ == "__main__":
    main()
