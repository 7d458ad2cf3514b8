#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/e2e/test_vsock_restart.sh: ring restarts in bulkhead-vsock, without KVM. The probe plays
# bulkhead-vmm (its own virtio-mmio transport and vhost-user front end) and the guest (the
# freestanding test guest's driver, tests/guests/vsock_drv.c) against the real back end:
# traffic, QueueReady 0 -> 1, a reset and re-initialisation, a reset in mid-stream followed by
# notifies, and QEMU's RESET_OWNER; traffic must flow after each, and the back end must stay
# alive and idle. (The same scenarios run in a real guest under KVM in test_vmm.sh.)
. "$(dirname "$0")/lib.sh"
PROBE=$BUILD/tests/vsock-restart-probe
VS=${VSOCK_BIN:-$BIN/bulkhead-vsock} # VSOCK_BIN: e.g. a sanitizer build

if [ ! -x "$PROBE" ] || [ ! -x "$VS" ]; then
	skip "vsock ring restarts" "$PROBE or $VS not built (make test builds both)"
	plan_done; exit 0
fi

mkdir -p "$TMP/vsock"
"$VS" --socket "$TMP/vhost.sock" --guest-cid 3 --uds-path "$TMP/vsock/vsock.sock" -v \
	2> "$TMP/vsock.err" &
vpid=$!
wait_socket "$TMP/vhost.sock" 10

timeout 120 "$PROBE" drive "$TMP/vhost.sock" "$TMP/vsock/vsock.sock" "$vpid" \
	> "$TMP/probe.out" 2> "$TMP/probe.err"
rc=$?
while IFS= read -r line; do
	case $line in
	"PASS "*) ok "${line#PASS }" ;;
	"FAIL "*) not_ok "${line#FAIL }" ;;
	"# "*) echo "$line" ;;
	esac
done < "$TMP/probe.out"
check_eq "probe exit status" 0 "$rc"
[ -s "$TMP/probe.err" ] && not_ok "the VMM side said nothing on stderr" "$(cat "$TMP/probe.err")" ||
	ok "the VMM side said nothing on stderr"

# The front end went away with the probe: an orderly end, counters and no complaint.
i=0
while kill -0 "$vpid" 2> /dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$vpid" 2> /dev/null; then
	not_ok "back end ends when its front end goes" "still running"
	kill "$vpid"
fi
wait "$vpid"
check_eq "back end exit status" 0 "$?"
grep -q 'bulkhead-vsock: connections' "$TMP/vsock.err" && ! grep -v 'bulkhead-vsock: connections' "$TMP/vsock.err" | grep -q . &&
	ok "back end stderr: its counters only" || not_ok "back end stderr: its counters only" "$(cat "$TMP/vsock.err")"
grep -o 'requests [0-9]*' "$TMP/vsock.err" | grep -qx 'requests 0' &&
	ok "no front-end request refused" || not_ok "no front-end request refused" "$(cat "$TMP/vsock.err")"
plan_done
