#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/e2e/test_vsock.sh: bulkhead-vsock under QEMU (TCG) with a real guest — byte-exact data
# both ways (SHA-256), prompt resets with no listener, the CONNECT handshake, a guest that stops
# reading not growing the back end's memory, and the back end's lifecycle.
. "$(dirname "$0")/lib.sh"

QEMU=$(command -v qemu-system-x86_64 || true)
VS=${VSOCK_BIN:-$BIN/bulkhead-vsock} # VSOCK_BIN: e.g. a sanitizer build
TOOL=$BUILD/tests/guest-tools/vsock-tool
INITRD=$BUILD/tests/guest-tools/initramfs-test.cpio
# The test plays the session's supervisor: D is a session run directory, so that
# `bulkhead exec $ID` reaches the guest agent through this back end.
ID=0123456789abcdef
export BULKHEAD_RUNDIR="$TMP/run"
D=$BULKHEAD_RUNDIR/$ID
# Made as a supervisor makes it: ours and 0700, in a base that is too (session/rundir.h).
mkdir -m 700 "$BULKHEAD_RUNDIR" "$D" && mkdir -m 700 "$D/vsock"

# sha FILE: the hex SHA-256 only.
sha() { sha256sum "$1" | cut -d' ' -f1; }
# rss_anon PID: kB of anonymous memory (what buffering would grow; guest RAM is shared).
rss_anon() { awk '/^RssAnon:/ { print $2 }' "/proc/$1/status" 2>/dev/null; }
# wait_for FILE PATTERN TRIES: polls every 0.1 s.
wait_for() {
	i=0
	while [ $i -lt "$3" ]; do
		grep -q "$2" "$1" 2>/dev/null && return 0
		sleep 0.1; i=$((i + 1))
	done
	return 1
}

# The socket appears only once the back end listens on it. A back end under seccomp cannot
# remove its socket at the end, so an earlier one's is removed first: connecting to that
# stale socket would be refused (a race a slower start, e.g. a sanitizer build, loses).
start_backend() {
	rm -f "$D/vhost.sock"
	"$VS" --socket "$D/vhost.sock" --guest-cid 3 --uds-path "$D/vsock/vsock.sock" -v \
		2> "$D/vsock.err" &
	VPID=$!
	wait_socket "$D/vhost.sock" 30
}

# boot_guest SCRIPT: boots a guest with the vsock device in the background ($QPID), holds
# the agent's lifeline ($LIFE), and runs `sh -c SCRIPT` through `bulkhead exec` once the
# agent answers; the script's output goes to $D/console, the serial console to $D/serial.
boot_guest() {
	"$TOOL" usink "$D/vsock/vsock.sock_1025" 900 &
	LIFE=$!
	timeout 300 "$QEMU" \
		-M microvm,acpi=off,x-option-roms=off,rtc=on,isa-serial=on,pit=on,pic=on,memory-backend=mem \
		-object memory-backend-memfd,id=mem,size=256M,share=on -m 256 -smp 1 \
		-global virtio-mmio.force-legacy=false -accel tcg -cpu max -nodefaults \
		-no-user-config -no-reboot -display none -monitor none -serial stdio \
		-chardev "socket,id=vs,path=$D/vhost.sock" -device vhost-user-vsock-device,chardev=vs \
		-kernel "$LIBDIR/vmlinux" -initrd "$INITRD" \
		-append "console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=t rdinit=/init tsc=reliable no_timer_check" \
		> "$D/serial" 2> "$D/qemu.err" < /dev/null &
	QPID=$!
	(
		i=0
		until "$BULKHEAD" exec "$ID" -- true 2> /dev/null; do
			i=$((i + 1)); [ $i -gt 600 ] && exit 1; sleep 0.5
		done
		"$BULKHEAD" exec "$ID" -- sh -c "$1"
	) > "$D/console" 2>&1 &
}

# result NAME: the words after "RESULT NAME" in the console.
result() { tr -d '\036' < "$D/console" | sed -n "s/^RESULT $1 //p" | head -n 1; }

if [ -z "$QEMU" ] || ! "$QEMU" -device help 2>/dev/null | grep -q vhost-user-vsock-device; then
	skip "vsock end to end" "qemu-system-x86_64 with vhost-user-vsock-device not found"
	plan_done; exit 0
fi
if [ ! -x "$TOOL" ] || [ ! -f "$INITRD" ]; then
	skip "vsock end to end" "test initramfs missing: make guest-tools"
	plan_done; exit 0
fi

# ---- one guest session runs every guest-side step in order ----
head -c 3145728 /dev/urandom > "$D/h2g.bin"   # host -> guest payload
head -c 2097152 /dev/urandom > "$D/g2h.bin"   # host's reply on the guest's connection
start_backend
"$TOOL" ulisten "$D/vsock/vsock.sock_1234" < "$D/g2h.bin" > "$D/recv.bin" &
LPID=$!
# Host listener that accepts and never reads: the guest's writes must stall on credit.
"$TOOL" usink "$D/vsock/vsock.sock_1235" 25 &
SPID=$!
sleep 0.2
boot_guest '
echo "RESULT norst $(vsock-tool connect 4321) rc=$?"
head -c 4194304 /dev/urandom > /tmp/s
vsock-tool connect 1234 < /tmp/s > /tmp/r
echo "RESULT g2h rc=$? $(sha256sum /tmp/s | cut -d" " -f1) $(sha256sum /tmp/r | cut -d" " -f1)"
vsock-tool listen 5000 > /tmp/h
echo "RESULT h2g rc=$? $(sha256sum /tmp/h | cut -d" " -f1)"
vsock-tool sink 5001 12
echo "RESULT sink done"
head -c 33554432 /dev/zero | vsock-tool connect 1235 > /dev/null
echo "RESULT gsink rc=$?"
'

# No listener on the host: the guest gets a reset, promptly.
if wait_for "$D/console" "RESULT norst" 1200; then
	r=$(result norst)
	case $r in
	*"Connection reset by peer"*|*"Connection refused"*)
		ms=$(echo "$r" | sed -n 's/.*CONNECT-FAILED .* \([0-9]*\) ms.*/\1/p')
		if [ -n "$ms" ] && [ "$ms" -lt 1000 ]; then
			ok "guest connect to a port with no host listener is reset ($ms ms)"
		else
			not_ok "guest connect to a port with no host listener is reset within 1 s" "$r"
		fi ;;
	*) not_ok "guest connect to a port with no host listener is reset" "$r" ;;
	esac
else
	not_ok "guest connect to a port with no host listener is reset" "no result; console:" \
		"$(tail -n 20 "$D/console")" "$(cat "$D/vsock.err" "$D/qemu.err")"
fi

# Guest -> host listener on vsock.sock_1234: 4 MiB up, 2 MiB back, both byte-exact.
if wait_for "$D/console" "RESULT g2h" 1800; then
	wait $LPID
	set -- $(result g2h)
	check_eq "guest -> host stream: guest side exits 0" "rc=0" "$1"
	check_eq "guest -> host stream: 4 MiB arrive byte-exact (SHA-256)" "$2" "$(sha "$D/recv.bin")"
	check_eq "guest -> host stream: 2 MiB reply arrives byte-exact (SHA-256)" \
		"$(sha "$D/g2h.bin")" "$3"
else
	not_ok "guest -> host stream" "no result" "$(tail -n 20 "$D/console")"
fi

# Host -> guest: no listener on port 5999 closes the connection; port 5000 handshakes.
"$TOOL" uconnect "$D/vsock/vsock.sock" 5999 < /dev/null > /dev/null 2> "$D/uc.err"
check_eq "host CONNECT to a guest port with no listener is closed" "4" "$?"
if wait_for "$D/console" "LISTENING 5000" 600; then
	"$TOOL" uconnect "$D/vsock/vsock.sock" 5000 < "$D/h2g.bin" > /dev/null 2> "$D/uc.err"
	rc=$?
	check_eq "host CONNECT to a guest listener gets OK <port>" "0" "$rc"
	grep -qE '^OK [0-9]+$' "$D/uc.err" && ok "handshake line is 'OK <hostport>'" ||
		not_ok "handshake line is 'OK <hostport>'" "$(cat "$D/uc.err")"
	wait_for "$D/console" "RESULT h2g" 600
	set -- $(result h2g)
	check_eq "host -> guest stream: 3 MiB arrive byte-exact (SHA-256)" \
		"rc=0 $(sha "$D/h2g.bin")" "$1 $2"
else
	not_ok "host -> guest stream" "guest never listened" "$(tail -n 20 "$D/console")"
fi

# A guest that stops reading: the host writer blocks, the back end does not buffer.
if wait_for "$D/console" "LISTENING 5001" 600; then
	base=$(rss_anon $VPID)
	head -c 67108864 /dev/zero | "$TOOL" uconnect "$D/vsock/vsock.sock" 5001 > /dev/null 2>&1 &
	WPID=$!
	max=0 i=0
	while [ $i -lt 20 ]; do
		sleep 0.25; r=$(rss_anon $VPID); [ "${r:-0}" -gt $max ] && max=$r; i=$((i + 1))
	done
	# 64 MiB offered; the guest's 256 KiB buffer and our per-connection bound are all
	# that may be held. 4 MiB leaves room for allocator noise, far below 64 MiB.
	if kill -0 $WPID 2>/dev/null && [ $((max - base)) -lt 4096 ]; then
		ok "guest not reading: host writer blocked, back end RssAnon +$((max - base)) kB (bound 4096)"
	else
		not_ok "guest not reading: back end memory bounded" "base $base kB, max $max kB"
	fi
	wait $WPID 2>/dev/null
else
	not_ok "guest not reading: back end memory bounded" "guest never listened"
fi

# A host listener that stops reading: the guest stalls on credit, the back end holds at most
# its per-connection buffer.
if wait_for "$D/console" "RESULT sink" 600; then
	sleep 3
	base=$(rss_anon $VPID) max=0 i=0
	while [ $i -lt 12 ]; do
		sleep 0.25; r=$(rss_anon $VPID); [ "${r:-0}" -gt $max ] && max=$r; i=$((i + 1))
	done
	if [ $((max - base)) -lt 4096 ] && [ "$max" -lt 16384 ]; then
		ok "host not reading: back end RssAnon $max kB (bound 16384), not growing"
	else
		not_ok "host not reading: back end memory bounded" "base $base kB, max $max kB"
	fi
else
	not_ok "host not reading: back end memory bounded" "guest never got there"
fi
kill $SPID 2>/dev/null
wait_for "$D/console" "RESULT gsink" 600
kill $LIFE 2>/dev/null # the session's end: the guest powers off
wait $QPID

# The front end going away is an orderly end.
i=0; while kill -0 $VPID 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 $VPID 2>/dev/null; then
	not_ok "back end exits when the front end closes" "still running"; kill $VPID
else
	wait $VPID; check_eq "back end exits 0 when the front end closes" "0" "$?"
fi
grep -q "bad: chain 0 addr 0 type 0 len 0 op 0 state 0 credit 0" "$D/vsock.err" &&
	ok "a well-behaved guest trips no protocol counter" ||
	not_ok "a well-behaved guest trips no protocol counter" "$(cat "$D/vsock.err")"

# A front end speaking garbage (a 12-byte "header" with request 'CONN'): non-zero exit and
# one line on stderr.
start_backend
timeout 20 "$TOOL" uconnect "$D/vhost.sock" 123 < /dev/null > /dev/null 2> "$D/bad-front.err"
# Bounded: a back end that never saw the connection must fail the check, not hang the suite.
i=0; while kill -0 $VPID 2> /dev/null && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
kill $VPID 2> /dev/null
wait $VPID; rc=$?
lines=$(grep -c . "$D/vsock.err")
[ $rc -ne 0 ] && [ $rc -ne 143 ] && [ "$lines" -ge 1 ] && [ "$lines" -le 2 ] &&
	ok "bad front end: exit $rc, '$(head -n 1 "$D/vsock.err")'" ||
	not_ok "bad front end: non-zero exit with one line" "rc $rc" "$(cat "$D/vsock.err")" \
		"the front end: $(cat "$D/bad-front.err")"

# The launcher dying takes the back end with it (PR_SET_PDEATHSIG).
sh -c "\"$VS\" --socket \"$D/vhost2.sock\" --guest-cid 3 --uds-path \"$D/v2.sock\" &
	echo \$! > \"$D/child.pid\"; wait" &
PARENT=$!
i=0; while [ ! -s "$D/child.pid" ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
sleep 0.2
kill -9 $PARENT
child=$(cat "$D/child.pid")
i=0; while kill -0 "$child" 2>/dev/null && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
if kill -0 "$child" 2>/dev/null; then
	not_ok "back end exits when its parent dies" "pid $child still alive"; kill "$child"
else
	ok "back end exits when its parent dies"
fi
plan_done
