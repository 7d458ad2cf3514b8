#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/e2e/test_vhost_user_virtiofsd.sh: bulkhead-vmm's virtio-mmio transport and vhost-user
# front end against Debian's real virtiofsd: handshake, memory table, ring set-up (each step
# acked), one FUSE_INIT through the rings, then virtiofsd killed mid-session is noticed.
. "$(dirname "$0")/lib.sh"
PROBE=$BUILD/tests/vhost-user-probe
VIRTIOFSD=/usr/lib/qemu/virtiofsd

if [ ! -x "$PROBE" ]; then
	skip "vhost-user handshake with virtiofsd" "$PROBE not built (make $PROBE)"
	plan_done; exit 0
fi
if [ ! -x "$VIRTIOFSD" ]; then
	skip "vhost-user handshake with virtiofsd" "no $VIRTIOFSD (apt-get install qemu-system-common)"
	plan_done; exit 0
fi
if [ "$(id -u)" -ne 0 ]; then
	skip "vhost-user handshake with virtiofsd" "virtiofsd's chroot sandbox needs root here"
	plan_done; exit 0
fi

mkdir -p "$TMP/share"
echo hello > "$TMP/share/file"
# sandbox=chroot: one process, so the pid the probe kills is the one holding the socket (the
# namespace sandbox forks a child that outlives a SIGKILL of its parent until its own
# parent-death signal is handled: seen to take over 10 s in a loaded sanitizer run).
"$VIRTIOFSD" --socket-path="$TMP/vfsd.sock" -o source="$TMP/share" -o sandbox=chroot \
	-o cache=auto > "$TMP/virtiofsd.log" 2>&1 &
vfsd=$!
wait_socket "$TMP/vfsd.sock" 10
if [ ! -S "$TMP/vfsd.sock" ]; then
	not_ok "virtiofsd listens" "$(tail -n 5 "$TMP/virtiofsd.log")"
	kill "$vfsd" 2>/dev/null
	plan_done; exit 0
fi
ok "virtiofsd listens"

# The probe kills virtiofsd itself after the data-path check, and times the detection.
timeout 60 "$PROBE" "$TMP/vfsd.sock" "$vfsd" > "$TMP/probe.out" 2> "$TMP/probe.err"
rc=$?
while IFS= read -r line; do
	case $line in
	"PASS "*) ok "${line#PASS }" ;;
	"FAIL "*) not_ok "${line#FAIL }" ;;
	"# "*) echo "$line" ;;
	esac
done < "$TMP/probe.out"
check_eq "probe exit status" 0 "$rc"
grep -q 'closed its socket' "$TMP/probe.err" && ok "one stderr line names the dead back end" ||
	not_ok "one stderr line names the dead back end" "$(cat "$TMP/probe.err")"
check_eq "exactly one stderr line" 1 "$(grep -c . "$TMP/probe.err")"
wait "$vfsd" 2>/dev/null
kill -0 "$vfsd" 2>/dev/null && not_ok "virtiofsd gone" || ok "virtiofsd gone"
plan_done
