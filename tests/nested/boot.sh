#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Boots L1 once (tests/nested/README.md): QEMU 10 from the package cache, TCG emulating AMD SVM
# with nested paging, 2 vCPUs and 4 GiB, Debian's cloud kernel and the image from image.sh; L1
# runs PLAN (l1-run.sh) and powers off. Its kernel console goes to OUTDIR/console, its report
# (l1-run.sh's line protocol) to OUTDIR/report. A whole L1 that stops making progress is killed
# after TIMEOUT seconds (the watchdogs inside L1 catch a hung command much sooner), and an L1
# whose console and report stay silent for STALL seconds (300) is stopped as frozen
# (OUTDIR/stalled says after how long).
# Usage: tests/nested/boot.sh PLAN OUTDIR [TIMEOUT]   (BUILD=build)
# Exit: QEMU's status (0: L1 powered off), 2 with one line when L1's packages cannot be
# fetched (no network the first time), 124/137 when TIMEOUT ended it.
set -u
here=$(cd "$(dirname "$0")" && pwd)
plan=${1?usage: boot.sh PLAN OUTDIR [TIMEOUT]}
out=${2:?usage: boot.sh PLAN OUTDIR [TIMEOUT]}
limit=${3:-1200}
mkdir -p "$out"

pkgs=$(sh "$here/fetch.sh") || exit $?
img=$(sh "$here/image.sh" "$pkgs") || exit 1
echo "$pkgs" > "$out/pkgs"
echo "$img" > "$out/image"
qemu=$pkgs/usr/bin/qemu-system-x86_64
: > "$out/console"
: > "$out/report"
date +%s%N > "$out/start_ns"
# -cpu qemu64,+svm,+npt: TCG emulates AMD SVM with nested paging (not VMX); +rdrand so that
# L1's and L2's getrandom never waits for entropy.
QEMU_MODULE_DIR=$pkgs/usr/lib/x86_64-linux-gnu/qemu timeout -s KILL "$limit" \
	"$qemu" -L "$pkgs/usr/share/qemu" -L "$pkgs/usr/share/seabios" \
	-M pc -accel tcg -cpu qemu64,+svm,+npt,+rdrand -smp 2 -m 4G \
	-nodefaults -no-user-config -display none -monitor none -no-reboot \
	-serial "file:$out/console" -serial "file:$out/report" \
	-kernel "$img/vmlinuz" -initrd "$img/l1.cpio" \
	-append "console=ttyS0 quiet panic=-1 nested.plan=$plan" \
	< /dev/null > "$out/qemu.log" 2>&1 &
qpid=$!
# A frozen L1 (TCG's emulated SVM has been seen to stop all of L1, with no console line and no
# watchdog of its own firing) is stopped after STALL seconds in which neither its console nor
# its report grew, and marked so; a step that hangs is caught sooner by its watchdog inside L1.
last= still=0
while kill -0 "$qpid" 2> /dev/null; do
	sleep 10
	now=$(cat "$out/console" "$out/report" 2> /dev/null | wc -c)
	if [ "$now" = "$last" ]; then still=$((still + 10)); else still=0 last=$now; fi
	if [ "$still" -ge "${STALL:-300}" ]; then
		echo "$still" > "$out/stalled"
		pkill -KILL -P "$qpid" 2> /dev/null
		kill -KILL "$qpid" 2> /dev/null
		break
	fi
done
wait "$qpid"
rc=$?
date +%s%N > "$out/end_ns"
exit $rc
