#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (bench/nested.sh boots it; `make bench-nested NESTED_BENCH=snapshot`): a Linux
# guest's first answer after a cold boot against after a restore of the same guest, in one run,
# alternating, RUNS times each, for 256 MiB and 1 GiB of guest RAM. The guest is
# tests/guest-tools/snap_init.c serving vsock port 5000 (no image, no shares: what a snapshot holds
# today); "first byte" is the host client's answer to its line, from the moment bulkhead-vmm
# is started (a fresh bulkhead-vsock each time, started before the clock, in both cases).
# Also the save itself, the snapshot's size, and what a restore costs per MiB of RAM in use.
# Figures are relative: L1 runs under TCG.
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
VMM=$BUILD/bin/bulkhead-vmm
VSOCKD=$BUILD/bin/bulkhead-vsock
LIB=$BUILD/lib/bulkhead
FDC=$BUILD/tests/fd-connect
RUNS=${RUNS:-5}
TMP=$(mktemp -d /tmp/nested-snapshot.XXXXXX)
trap 'kill $(jobs -p) 2> /dev/null; rm -rf "$TMP"' EXIT
umask 077

printf 'dir /dev 0755 0 0\nnod /dev/console 0600 0 0 c 5 1\nfile /init %s 0755 0 0\n' \
	"$(cd "$BUILD/tests" && pwd)/snap-init" > "$TMP/list"
"$LIB/gen_init_cpio" "$TMP/list" > "$TMP/init.cpio"
CMDLINE="console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=k rdinit=/init tsc=reliable no_timer_check quiet vsock"

now_ns() { date +%s%N; }
ms() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }'; }
# vsockd: a fresh bulkhead-vsock on $TMP/vs.sock (host side $TMP/vs_PORT).
vsockd() {
	rm -f "$TMP/vs.sock"
	"$VSOCKD" --socket "$TMP/vs.sock" --guest-cid 3 --uds-path "$TMP/vs" 2> /dev/null &
	while [ ! -S "$TMP/vs.sock" ]; do sleep 0.005; done
}
# ask: connects to the guest's port 5000 until it answers "quit" (the guest then ends).
ask() {
	until "$FDC" 3="$TMP/vs" -- sh -c "printf 'CONNECT 5000\nquit\n' >&3; head -n 2 <&3" 2> /dev/null |
		grep -q '^echo: quit'; do sleep 0.005; done
}

for mem in 256 1024; do
	# The snapshot: booted, listening, saved.
	vsockd
	"$VMM" --kernel "$LIB/vmlinux" --initrd "$TMP/init.cpio" --cmdline "$CMDLINE" --mem $mem \
		--virtio-vsock "$TMP/vs.sock,cid=3" --timeout-ms 120000 --snapshot-fd 3 3<> "$TMP/snap" \
		> "$TMP/out" 2> "$TMP/err" < /dev/null &
	pid=$!
	until grep -q '^snapinit: listening' "$TMP/out"; do sleep 0.01; done
	t0=$(now_ns)
	kill -USR1 $pid
	wait $pid
	t1=$(now_ns)
	inuse=$(od -An -tu8 -j 72 -N 8 "$TMP/snap" | awk '{ printf "%.1f", $1 / 1048576 }')
	echo "== ${mem} MiB guest: saved in $(ms "$t0" "$t1") ms (signal to exit); $inuse MiB of RAM in use;" \
		"file $(du -k "$TMP/snap" | awk '{ printf "%.1f", $1 / 1024 }') MiB on disk"
	: > "$TMP/cold"; : > "$TMP/rest"; : > "$TMP/load"; : > "$TMP/set"; : > "$TMP/ready"
	i=0
	while [ $i -lt "$RUNS" ]; do
		vsockd
		t0=$(now_ns)
		"$VMM" --kernel "$LIB/vmlinux" --initrd "$TMP/init.cpio" --cmdline "$CMDLINE" --mem $mem \
			--virtio-vsock "$TMP/vs.sock,cid=3" --timeout-ms 120000 > /dev/null 2>&1 < /dev/null &
		pid=$!
		ask
		ms "$t0" "$(now_ns)" >> "$TMP/cold"
		wait $pid
		vsockd
		t0=$(now_ns)
		"$VMM" --restore-fd 3 --virtio-vsock "$TMP/vs.sock,cid=3" --timeout-ms 120000 \
			3< "$TMP/snap" > /dev/null 2> "$TMP/rerr" < /dev/null &
		pid=$!
		ask
		ms "$t0" "$(now_ns)" >> "$TMP/rest"
		wait $pid || { echo "restore failed: $(cat "$TMP/rerr")"; exit 1; }
		# bulkhead-vmm's own account: RAM read and checked, state set, since its start.
		sed -n 's/.*restore: .* checked in \([0-9.]*\) ms; .* set in \([0-9.]*\) ms (\([0-9.]*\) ms since start).*/\1 \2 \3/p' \
			"$TMP/rerr" | { read -r l s r; echo "$l" >> "$TMP/load"; echo "$s" >> "$TMP/set"; echo "$r" >> "$TMP/ready"; }
		i=$((i + 1))
	done
	c=$(median < "$TMP/cold"); r=$(median < "$TMP/rest")
	echo "cold boot to first answer: median $c ms ($(sort -n "$TMP/cold" | paste -sd' '))"
	echo "restore to first answer:   median $r ms ($(sort -n "$TMP/rest" | paste -sd' '))"
	l=$(median < "$TMP/load")
	echo "  of which in bulkhead-vmm: RAM read and checked $l ms, vCPUs and devices set" \
		"$(median < "$TMP/set") ms, ready to run $(median < "$TMP/ready") ms after its start"
	awk -v c="$c" -v r="$r" -v m="$inuse" -v l="$l" 'BEGIN {
		printf "restore / cold = %.3f (%.1fx faster); RAM per MiB in use: %.2f ms\n", r / c, c / r, l / m }'
done
