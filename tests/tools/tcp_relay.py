#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/tcp_relay.py SOCK: a TCP port on 127.0.0.1 (printed on stdout) whose connections
# are carried to the Unix socket SOCK, byte for byte, half closes included: how clients that
# only take a proxy URL (curl -x, grpc.http_proxy) reach a broker's session socket, as the
# guest's own relay does inside the VM.
import socket
import sys
import threading


def pipe(src, dst):
    try:
        while True:
            b = src.recv(65536)
            if not b:
                break
            dst.sendall(b)
        dst.shutdown(socket.SHUT_WR)
    except OSError:
        try:
            dst.shutdown(socket.SHUT_RDWR)
        except OSError:
            pass


def carry(conn, path):
    conn.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)  # as the guest's own relay
    up = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        up.connect(path)
    except OSError:
        conn.close()
        return
    t = threading.Thread(target=pipe, args=(up, conn), daemon=True)
    t.start()
    pipe(conn, up)
    t.join()
    conn.close()
    up.close()


def main():
    path = sys.argv[1]
    lsn = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lsn.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsn.bind(("127.0.0.1", 0))
    lsn.listen(128)
    print(lsn.getsockname()[1], flush=True)
    while True:
        conn, _ = lsn.accept()
        threading.Thread(target=carry, args=(conn, path), daemon=True).start()


if __name__ == "__main__":
    main()
