#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Boot on arm64 KVM, bulkhead-vmm beside QEMU, in the nested arm64 host of tests/nested/arm64.sh
# (QEMU 10's TCG: virt with EL2 and a GICv3). Inside it (bench/arm64-boot-l1.sh) the same
# Debian arm64 kernel and busybox initramfs boot RUNS times under each, alternating: the
# arm64 bulkhead-vmm (make ARCH=arm64) and bookworm's arm64 QEMU with -accel kvm. Medians of
# launch-to-exit and of the guest's own uptime at /init, and their ratios. The figures are
# relative: everything runs under TCG. Usage: RUNS=5 sh bench/arm64-boot.sh   (BUILD=build)
set -u
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
. "$(dirname "$0")/lib.sh"
ARM64_NESTED=$(cd "$(dirname "$0")/../tests/nested" && pwd)
. "$ARM64_NESTED/arm64_host.sh"
fail() { echo "arm64-boot: $*" >&2; exit 1; }
bench_tmp

pkgs=$(sh "$ARM64_NESTED/fetch.sh" --arch arm64) || fail "the arm64 packages could not be fetched"
arm64_vmm "$BUILD/arm64" || fail "make ARCH=arm64: $(tail -n 5 "$BUILD/arm64.log")"
arm64_tree "$pkgs" "$BUILD/arm64/bin/bulkhead-vmm" "$(dirname "$0")/arm64-boot-l1.sh" "$tmp/l1"
arm64_prog "$pkgs/arm64-qemu" usr/bin/qemu-system-aarch64 "$tmp/l1" || fail "cannot copy the arm64 QEMU"
arm64_cpio "$tmp/l1" "$tmp/l1.gz"
arm64_boot "$pkgs" 3 "$tmp/l1.gz" "$tmp/report" "bench.runs=$RUNS" ||
	fail "the arm64 host ended with status $?: $(tail -n 5 "$tmp/report")"
grep -q "^bench: done" "$tmp/report" || fail "the arm64 host did not finish: $(tail -n 10 "$tmp/report")"
grep "^bench: |" "$tmp/report" | head -n 10

echo "arm64 boot, $RUNS runs each, one vCPU, 256 MiB (nested arm64 host under TCG; medians):"
printf '%-14s %8s %8s %6s\n' engine wall_s init_s failed
for e in bulkhead-vmm qemu; do
	grep "^bench: $e rc=0 " "$tmp/report" | sed -n 's/.* wall=\([0-9.]*\) .*/\1/p' > "$tmp/$e.wall"
	grep "^bench: $e rc=0 " "$tmp/report" | sed -n 's/.* init=\([0-9.]*\)$/\1/p' > "$tmp/$e.init"
	bad=$(grep "^bench: $e " "$tmp/report" | grep -vc " rc=0 .* init=[0-9]")
	printf '%-14s %8s %8s %6s\n' "$e" "$(median "$tmp/$e.wall")" "$(median "$tmp/$e.init")" "$bad"
done
awk -v a="$(median "$tmp/bulkhead-vmm.wall")" -v b="$(median "$tmp/qemu.wall")" \
	-v c="$(median "$tmp/bulkhead-vmm.init")" -v d="$(median "$tmp/qemu.init")" \
	'BEGIN { printf "bulkhead-vmm / QEMU: launch to exit %.2f, guest uptime at /init %.2f\n", a / b, c / d }'
