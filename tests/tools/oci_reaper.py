#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
"""tests/tools/oci_reaper.py STATUS_FILE -- CMD...: what conmon and containerd's shim are to
an OCI runtime, for tests that call bulkhead-oci directly. It becomes a child subreaper, runs
CMD (a `bulkhead-oci create`), and then waits for the process CMD left behind (the
container's supervisor, adopted by us); its exit status, as a shell reports it (128+N for
signal N), goes to STATUS_FILE. CMD's own status goes to STATUS_FILE.create first."""
import ctypes
import os
import sys

PR_SET_CHILD_SUBREAPER = 36


def shell_status(st):
    return os.waitstatus_to_exitcode(st) if os.WIFEXITED(st) else 128 + os.WTERMSIG(st)


def main():
    if len(sys.argv) < 4 or sys.argv[2] != "--":
        sys.exit("usage: oci_reaper.py STATUS_FILE -- CMD...")
    out, cmd = sys.argv[1], sys.argv[3:]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.prctl(PR_SET_CHILD_SUBREAPER, 1, 0, 0, 0) != 0:
        sys.exit("prctl(PR_SET_CHILD_SUBREAPER) failed")
    pid = os.fork()
    if pid == 0:
        os.execvp(cmd[0], cmd)
    _, st = os.waitpid(pid, 0)
    with open(out + ".create", "w") as f:
        f.write("%d\n" % shell_status(st))
    # Every adopted process until none is left: the supervisor is the last to go (it reaps
    # its own helpers); its status is the one that counts.
    last = None
    while True:
        try:
            pid, st = os.wait()
        except ChildProcessError:
            break
        last = shell_status(st)
    with open(out, "w") as f:
        f.write("%s\n" % ("none" if last is None else last))


if __name__ == "__main__":
    main()
