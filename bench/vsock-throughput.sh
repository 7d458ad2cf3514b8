#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/vsock-throughput.sh: host <-> guest stream throughput through a session's bulkhead-vsock
# (`bulkhead start` with the test initramfs, the guest side of each transfer run by `bulkhead
# exec`), next to the same byte pump over a host Unix socketpair, round by round in the same run.
# Each figure is timed by the receiver, first byte to EOF. Prints medians and ratios; exits 1
# with the reason if any transfer did not happen in full.
# Usage: BUILD=build RUNS=5 MIB=16 ENGINE=auto TIMEOUT=300 sh bench/vsock-throughput.sh
# (INITRD: a guest image with /usr/local/bin/vsock-tool; default: the test initramfs)
set -u
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
MIB=${MIB:-16}
ENGINE=${ENGINE:-auto}
TIMEOUT=${TIMEOUT:-300} # seconds any one step may take
BYTES=$((MIB * 1048576))
BULKHEAD=$BUILD/bin/bulkhead
TOOL=$BUILD/tests/guest-tools/vsock-tool
INITRD=${INITRD:-$BUILD/tests/guest-tools/initramfs-test.cpio}
D=$(mktemp -d "${TMPDIR:-/tmp}/bulkhead-bench.XXXXXX")
# Our own run directory base: the session's sockets, where host listeners for the guest go.
export BULKHEAD_RUNDIR=$D/run
# vsock-tool's "STATS recv BYTES MS" line on stderr, host side (the guest's comes by exec -e).
export VSOCK_TOOL_STATS=1
id='' pids=''
cleanup() {
	for p in $pids; do kill "$p" 2> /dev/null; done
	[ -n "$id" ] && "$BULKHEAD" stop "$id" > /dev/null 2>&1
	rm -rf "$D"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# fail WHAT [FILE...]: the reason and the end of each non-empty FILE on stderr, then exit 1.
fail() {
	echo "vsock-throughput: FAILED: $1" >&2
	shift
	for f in "$@"; do
		[ -s "$f" ] || continue
		echo "--- end of $(basename "$f"):" >&2
		tail -n 15 "$f" | tr -d '\036' >&2
	done
	exit 1
}
# wait_until SECONDS CMD...: polls CMD every 0.05 s; status 1 if it never succeeded.
wait_until() {
	n=$(($1 * 20))
	shift
	while ! "$@"; do
		n=$((n - 1))
		[ $n -gt 0 ] || return 1
		sleep 0.05
	done
}
# received FILE: the byte count of FILE's STATS line (empty if there is none).
received() { awk '/^STATS recv/ { print $3 }' "$1"; }
# rate FILE: MiB/s from FILE's STATS line.
rate() { awk '/^STATS recv/ && $4 > 0 { printf "%.1f\n", $3 / 1048576 / ($4 / 1000) }' "$1"; }
# check WHAT FILE: FILE's STATS line must count every byte; its rate goes to FILE's direction.
check() {
	got=$(received "$2")
	[ "$got" = "$BYTES" ] || fail "$1: the receiver got ${got:-no STATS line, so nothing} of $BYTES bytes" "$2"
	rate "$2" >> "${2%.*}.rates"
}

for f in "$BULKHEAD" "$TOOL" "$INITRD"; do
	[ -e "$f" ] || fail "$f is missing (run 'make bench-vsock')"
done

"$BULKHEAD" start --engine "$ENGINE" --initrd "$INITRD" -v \
	--timeout $((RUNS * 3 * TIMEOUT + 600)) > "$D/id" 2> "$D/session.log" < /dev/null ||
	fail "bulkhead start --engine $ENGINE --initrd $INITRD exited $?" "$D/session.log"
id=$(cat "$D/id")
S=$BULKHEAD_RUNDIR/$id/vsock
[ -S "$S/vsock.sock" ] || fail "session $id has no $S/vsock.sock" "$D/session.log"
engine=$(sed -n 's/^bulkhead: engine: //p' "$D/session.log" | head -n 1)

# The guest sends from a tmpfs file: busybox head from /dev/zero manages only ~25 MB/s under
# TCG, so a pipe from it would measure head.
timeout "$TIMEOUT" "$BULKHEAD" exec "$id" -- sh -c \
	"command -v vsock-tool > /dev/null || { echo 'no vsock-tool in the guest image' >&2; exit 3; }
	 head -c $BYTES /dev/zero > /tmp/up && [ \$(wc -c < /tmp/up) = $BYTES ]" \
	> "$D/prep" 2>&1 || fail "guest preparation (bulkhead exec) exited $?" "$D/prep" "$D/session.log"

r=1
while [ $r -le "$RUNS" ]; do
	# Guest -> host: a host listener on the session's vsock.sock_1234, the guest connects.
	rm -f "$S/vsock.sock_1234"
	timeout "$TIMEOUT" "$TOOL" ulisten "$S/vsock.sock_1234" < /dev/null > /dev/null \
		2> "$D/g2h.$r" &
	lpid=$! pids="$pids $lpid"
	wait_until 10 test -S "$S/vsock.sock_1234" || fail "round $r: host listener did not start" "$D/g2h.$r"
	# The jailed back end runs as the session's own uid (it owns $S): it must be able to connect.
	chown --reference="$S" "$S/vsock.sock_1234" ||
		fail "round $r: cannot give $S/vsock.sock_1234 to the session's uid"
	timeout "$TIMEOUT" "$BULKHEAD" exec "$id" -- sh -c 'exec vsock-tool connect 1234 < /tmp/up' \
		> "$D/gx.$r" 2>&1
	rc=$?
	[ $rc = 0 ] || fail "round $r guest -> host: the guest's vsock-tool connect (bulkhead exec) exited $rc" \
		"$D/gx.$r" "$D/g2h.$r" "$D/session.log"
	wait $lpid || fail "round $r guest -> host: the host listener exited $?" "$D/g2h.$r"
	check "round $r guest -> host" "$D/g2h.$r"

	# Host -> guest: the guest listens on port 5000; the host connects once it says so.
	timeout "$TIMEOUT" "$BULKHEAD" exec -e VSOCK_TOOL_STATS=1 "$id" -- \
		sh -c 'exec vsock-tool listen 5000 > /dev/null' > "$D/hx.$r" 2> "$D/h2g.$r" &
	gpid=$! pids="$pids $gpid"
	wait_until "$TIMEOUT" grep -qs "LISTENING 5000" "$D/h2g.$r" ||
		fail "round $r host -> guest: the guest never listened" "$D/hx.$r" "$D/h2g.$r" "$D/session.log"
	head -c $BYTES /dev/zero | timeout "$TIMEOUT" "$TOOL" uconnect "$S/vsock.sock" 5000 \
		> /dev/null 2> "$D/uc.$r"
	rc=$?
	[ $rc = 0 ] || fail "round $r host -> guest: the host's vsock-tool uconnect exited $rc" "$D/uc.$r" "$D/h2g.$r"
	wait $gpid || fail "round $r host -> guest: the guest's vsock-tool listen (bulkhead exec) exited $?" \
		"$D/hx.$r" "$D/h2g.$r" "$D/session.log"
	check "round $r host -> guest" "$D/h2g.$r"

	# The reference: the same pump over a host socketpair.
	"$TOOL" pair $BYTES 2> "$D/pair.$r" || fail "round $r reference: vsock-tool pair exited $?" "$D/pair.$r"
	check "round $r reference" "$D/pair.$r"
	r=$((r + 1))
done

g2h=$(median "$D/g2h.rates") && h2g=$(median "$D/h2g.rates") && ref=$(median "$D/pair.rates") ||
	fail "no throughput figures"
echo "vsock stream throughput, $MIB MiB per transfer, median of $RUNS rounds; engine: $engine"
awk -v a="$g2h" -v b="$h2g" -v r="$ref" 'BEGIN {
	printf "  %-44s %10s %10s\n", "", "MiB/s", "ratio"
	printf "  %-44s %10.1f %10.4f\n", "guest -> host through bulkhead-vsock", a, a / r
	printf "  %-44s %10.1f %10.4f\n", "host -> guest through bulkhead-vsock", b, b / r
	printf "  %-44s %10.1f %10.4f\n", "reference: host socketpair, same pump", r, 1
}'
