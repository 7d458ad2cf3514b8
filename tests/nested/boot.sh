#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Boots L1 once (tests/nested/README.md): QEMU 10 from the package cache, TCG emulating AMD SVM
# with nested paging, 2 vCPUs and 4 GiB, Debian's cloud kernel and the image from image.sh; L1
# runs PLAN (l1-run.sh) and powers off. Its kernel console goes to OUTDIR/console, its report
# (l1-run.sh's line protocol) to OUTDIR/report. A whole L1 that stops making progress is killed
# after TIMEOUT seconds (the watchdogs inside L1 catch a hung command much sooner).
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
	< /dev/null > "$out/qemu.log" 2>&1
rc=$?
date +%s%N > "$out/end_ns"
exit $rc
