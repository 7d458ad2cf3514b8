#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/tools/serve_conns.py: a tenant holding connections half-open (a request head never
# finished) must not hold `bulkhead serve` from anyone else. As uid UID it opens SHARE+6
# connections, each with part of a request head; prints what the last one was answered,
# then whether root was served meanwhile, and (after they are closed) whether UID is served
# again. Usage: serve_conns.py SOCKET UID SHARE
# With "uids FIRST N TENANT": N uids from FIRST that may not use the daemon each hold one
# connection (as a user with many uids in user namespaces could); prints whether root and the
# tenant TENANT were served meanwhile, and what the last of the N was answered.
import os
import socket
import subprocess
import sys
import time

SOCK = sys.argv[1]


def health(as_uid=None):
    cmd = ["curl", "-s", "-m", "10", "--unix-socket", SOCK, "http://serve/v1/health"]
    if as_uid is not None:
        cmd = ["setpriv", "--reuid", str(as_uid), "--regid", str(as_uid), "--clear-groups"] + cmd
    return b'"ok":true' in subprocess.run(cmd, capture_output=True).stdout


def held_by_uids(first, n, tenant):
    r, w = os.pipe()
    kids = []
    for uid in range(first, first + n):
        pid = os.fork()
        if pid == 0:
            os.close(r)
            os.setgid(uid)
            os.setuid(uid)
            c = socket.socket(socket.AF_UNIX)
            c.connect(SOCK)
            c.settimeout(2)
            try:
                answer = c.recv(400)
            except OSError:
                answer = b"(held)"
            if uid == first + n - 1:
                os.write(w, answer[:400])
            time.sleep(6)
            os._exit(0)
        kids.append(pid)
    os.close(w)
    last = os.read(r, 400)
    print("last:", last.decode(errors="replace").replace("\r\n", " | "))
    print("root served while held:", health())
    print("tenant served while held:", health(tenant))
    for pid in kids:
        os.waitpid(pid, 0)


if sys.argv[2] == "uids":
    held_by_uids(int(sys.argv[3]), int(sys.argv[4]), int(sys.argv[5]))
    sys.exit(0)
UID, SHARE = int(sys.argv[2]), int(sys.argv[3])
r, w = os.pipe()
pid = os.fork()
if pid == 0:
    os.close(r)
    os.setgid(UID)
    os.setuid(UID)
    held = []
    for _ in range(SHARE + 6):
        s = socket.socket(socket.AF_UNIX)
        s.connect(SOCK)
        try:
            s.send(b"GET /v1/hea")
        except (BrokenPipeError, ConnectionResetError):
            pass  # past the share the daemon may answer and close before this is sent
        held.append(s)
    held[-1].settimeout(5)
    try:
        last = held[-1].recv(400)
    except OSError as e:
        last = repr(e).encode()
    os.write(w, last[:400])
    os.close(w)
    time.sleep(3)  # root asks while these are held
    os._exit(0)
os.close(w)
last = os.read(r, 400)
root_ok = health()
os.waitpid(pid, 0)
time.sleep(1)
print("last:", last.decode(errors="replace").replace("\r\n", " | "))
print("root served while held:", root_ok)
print("uid served after:", health(UID))
