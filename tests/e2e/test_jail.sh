#!/bin/sh
# The jail of the VM process and the device back ends (cli/jail.c, vsock/seccomp.c), as far as
# it is built: from inside a jailed bulkhead-vsock (its --jail-selftest hook, started by the
# launcher's own jail step, in an empty root) and from outside a live session's back end and
# QEMU. Not built yet: another uid, bulkhead-vmm's own allow-list (docs/THREAT-MODEL.md).
. "$(dirname "$0")/lib.sh"

PROBE=$BUILD/tests/jail-probe
if [ ! -x "$PROBE" ] || [ ! -x "$BIN/bulkhead-vsock" ]; then
	skip "jail" "jail-probe or bulkhead-vsock not built (make test builds them)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"

mkdir "$TMP/vsock"
"$PROBE" --root "$TMP/vsock" "$TMP/l.sock" "$BIN/bulkhead-vsock" --listen-fd 3 --guest-cid 3 \
	--uds-path "$TMP/vsock/vsock.sock" --jail-selftest > "$TMP/self" 2>&1
field() { sed -n "s/^selftest: $1:[[:space:]]*//p" "$TMP/self" | head -n 1; }
check_eq "jailed: no capability in any set (effective, permitted, bounding, ambient)" \
	"0000000000000000 0000000000000000 0000000000000000 0000000000000000" \
	"$(field CapEff) $(field CapPrm) $(field CapBnd) $(field CapAmb)"
check_eq "jailed: no_new_privs" 1 "$(field NoNewPrivs)"
check_eq "jailed: pid 1 of its own PID namespace" 1 "$(field NSpid | awk '{print $NF}')"
check_eq "jailed: only the expected descriptors (stdio, its socket, epoll, signalfd, listener)" \
	"0 1 2 3 4 5 6" "$(sed -n 's/^selftest: fds //p' "$TMP/self")"
top=$(echo "$TMP" | cut -d/ -f2)
check_eq "jailed: its root is empty but for the path to its own socket directory" " $top" \
	"$(sed -n 's/^selftest: root://p' "$TMP/self")"
check_eq "jailed: opening /etc/passwd fails" "Permission denied" \
	"$(sed -n 's/^selftest: open \/etc\/passwd: //p' "$TMP/self")"
check_eq "jailed: socket(AF_INET) fails" "Address family not supported by protocol" \
	"$(sed -n 's/^selftest: socket AF_INET: //p' "$TMP/self")"
if tail -n 1 "$TMP/self" | grep -q '^signal 31 ' && ! grep -q 'still alive' "$TMP/self"; then
	ok "jailed: a system call outside the allow-list kills it with SIGSYS"
else
	not_ok "a forbidden call kills with SIGSYS" "$(cat "$TMP/self")"
fi

# A live session's back end, seen from outside.
"$BULKHEAD" run -- sleep 3 > /dev/null 2>&1 &
rpid=$!
i=0; while ! pid=$(pgrep -f "bulkhead-vsock --listen-fd 3 --guest-cid [0-9]* --uds-path $BULKHEAD_RUNDIR") &&
	[ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
st=/proc/$pid/status
if [ -n "$pid" ] && grep -q '^Seccomp:[[:space:]]*2' "$st" && grep -q '^CapEff:[[:space:]]*0*$' "$st" &&
	[ "$(readlink /proc/$pid/ns/net)" != "$(readlink /proc/self/ns/net)" ] &&
	[ "$(readlink /proc/$pid/ns/ipc)" != "$(readlink /proc/self/ns/ipc)" ] &&
	[ ! -s /proc/$pid/environ ] && grep -q '^Max core file size *0 ' /proc/$pid/limits; then
	ok "a session's bulkhead-vsock: seccomp filter on, no capabilities, own net/IPC namespaces, empty environment, no core dumps"
else
	not_ok "a session's back end is jailed" "pid=$pid" "$(grep -E 'Seccomp|Cap|NoNew' "$st" 2>&1)"
fi
qpid=$(pgrep -f "qemu-system-x86_64 .*$BULKHEAD_RUNDIR" | head -n 1)
if [ -z "$qpid" ]; then
	skip "the VM process is jailed" "this session's engine is not QEMU"
elif grep -q '^Seccomp:[[:space:]]*2' "/proc/$qpid/status" &&
	grep -q '^CapEff:[[:space:]]*0*$' "/proc/$qpid/status" &&
	grep -q '^NoNewPrivs:[[:space:]]*1' "/proc/$qpid/status" &&
	[ "$(readlink /proc/$qpid/ns/net)" != "$(readlink /proc/self/ns/net)" ] && [ ! -s /proc/$qpid/environ ]; then
	ok "the session's QEMU: jailed the same way, under its own seccomp sandbox too"
else
	not_ok "the VM process is jailed" "$(grep -E 'Seccomp|Cap|NoNew' /proc/$qpid/status 2>&1)"
fi
wait $rpid
check_eq "the session still runs its command with the jailed back end" 0 "$?"

# --no-jail: a warning, and the back end runs as it is; a policy may forbid it.
"$BULKHEAD" run --no-jail -- true > /dev/null 2> "$TMP/nojail.err"
rc=$?
if [ $rc = 0 ] && grep -q 'warning: --no-jail' "$TMP/nojail.err"; then
	ok "--no-jail works for debugging, with a warning"
else
	not_ok "--no-jail" "rc=$rc" "$(cat "$TMP/nojail.err")"
fi
printf '{ "forbid_no_jail": true }\n' > "$TMP/policy.json"
"$BULKHEAD" run --policy "$TMP/policy.json" --no-jail -- true > /dev/null 2> "$TMP/err"
rc=$?
if [ $rc = 125 ] && grep -q 'forbid_no_jail' "$TMP/err"; then
	ok "a global policy that forbids --no-jail refuses it: $(tail -n 1 "$TMP/err")"
else
	not_ok "forbid_no_jail" "rc=$rc" "$(cat "$TMP/err")"
fi
plan_done
