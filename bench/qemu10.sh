#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Should the qemu engine use QEMU 10 where it is available? On this host (TCG), whole sessions
# (`bulkhead run --engine qemu --no-jail -- true`, unjailed because QEMU 10 lives in the cache of
# tests/nested/fetch.sh, outside the jail's /usr) under Debian's QEMU 7.2 and under QEMU 10 from
# bookworm-backports, alternating, RUNS each: medians, ratio, and failures (a session that fails or
# takes over 120 s counts as one). Usage: RUNS=20 sh bench/qemu10.sh   (BUILD=build)
set -u
BUILD=${BUILD:-build}
RUNS=${RUNS:-20}
. "$(dirname "$0")/lib.sh"
bin=$BUILD/bin/bulkhead
pkgs=$(sh "$(dirname "$0")/../tests/nested/fetch.sh") || { echo "bench: QEMU 10 cannot be fetched" >&2; exit 1; }
q10=$pkgs/usr/bin/qemu-system-x86_64
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
export QEMU_MODULE_DIR=$pkgs/usr/lib/x86_64-linux-gnu/qemu

echo "qemu engine (TCG), $RUNS sessions each, alternating; $(nproc) cores"
echo "  7.2: $(qemu-system-x86_64 --version | head -n 1)"
echo "  10:  $("$q10" --version | head -n 1)"
: > "$tmp/7"; : > "$tmp/10"
f7=0 f10=0
i=0
while [ $i -lt "$RUNS" ]; do
	for v in 7 10; do
		q=/usr/bin/qemu-system-x86_64
		[ $v = 10 ] && q=$q10
		t0=$(now_us)
		BULKHEAD_QEMU=$q timeout -s KILL 120 "$bin" run --engine qemu --no-jail -- sh -c 'echo ok' \
			> "$tmp/out" 2> "$tmp/err" < /dev/null
		rc=$?
		t=$(($(now_us) - t0))
		if [ $rc -eq 0 ] && [ "$(cat "$tmp/out")" = ok ]; then
			echo "$t" >> "$tmp/$v"
		else
			eval "f$v=\$((f$v + 1))"
			echo "  QEMU $v, run $i: status $rc: $(head -c 200 "$tmp/err")"
		fi
	done
	i=$((i + 1))
done
m7=$(median "$tmp/7"); m10=$(median "$tmp/10")
awk -v a="$m7" -v b="$m10" -v f7="$f7" -v f10="$f10" 'BEGIN {
	printf "  QEMU 7.2: median %.0f ms, %d failed\n  QEMU 10:  median %.0f ms, %d failed\n  ratio 10/7.2: %.2f\n",
		a / 1000, f7, b / 1000, f10, b / a }'
