#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Boot on arm64 KVM, bulkhead-vmm beside QEMU, in the nested arm64 host of tests/nested/arm64.sh
# (QEMU 10's TCG: virt with EL2 and a GICv3). Inside it (bench/arm64-boot-l1.sh), RUNS rounds
# of, alternating: Debian's arm64 kernel with a busybox initramfs under the arm64 bulkhead-vmm
# and under bookworm's arm64 QEMU with -accel kvm; our guest kernel (make ARCH=arm64) under
# bulkhead-vmm; and a whole `bulkhead run --engine kvm -- true`. Medians of launch-to-exit and
# of the guest's own uptime at /init, and the ratios. The figures are relative: everything
# runs under TCG. Usage: RUNS=5 sh bench/arm64-boot.sh   (BUILD=build)
set -u
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
. "$(dirname "$0")/lib.sh"
ARM64_NESTED=$(cd "$(dirname "$0")/../tests/nested" && pwd)
. "$ARM64_NESTED/arm64_host.sh"
fail() { echo "arm64-boot: $*" >&2; exit 1; }
bench_tmp

pkgs=$(sh "$ARM64_NESTED/fetch.sh" --arch arm64) || fail "the arm64 packages could not be fetched"
arm64_vmm "$BUILD/arm64" all || fail "make ARCH=arm64: $(tail -n 5 "$BUILD/arm64.log")"
arm64_tree "$pkgs" "$BUILD/arm64/bin/bulkhead-vmm" "$(dirname "$0")/arm64-boot-l1.sh" "$tmp/l1"
arm64_prog "$pkgs/arm64-qemu" usr/bin/qemu-system-aarch64 "$tmp/l1" || fail "cannot copy the arm64 QEMU"
arm64_stack "$pkgs" "$BUILD/arm64" "$tmp/l1" || fail "cannot copy the arm64 build"
# Our kernel takes only an uncompressed initramfs (kernel-config/bulkhead.config); both do.
gzip -dc "$tmp/l1/l2/initrd.gz" > "$tmp/l1/l2/initrd.cpio" && rm "$tmp/l1/l2/initrd.gz"
arm64_cpio "$tmp/l1" "$tmp/l1.gz"
arm64_boot "$pkgs" 3 "$tmp/l1.gz" "$tmp/report" "bench.runs=$RUNS" ||
	fail "the arm64 host ended with status $?: $(tail -n 5 "$tmp/report")"
grep -q "^bench: done" "$tmp/report" || fail "the arm64 host did not finish: $(tail -n 10 "$tmp/report")"
grep "^bench: |" "$tmp/report" | head -n 10

# A run succeeded when its status is 0 and, but for a session, its guest reached /init.
good() { # ENGINE KERNEL
	if [ "$1" = session ]; then
		grep "^bench: $1 $2 rc=0 " "$tmp/report"
	else
		grep "^bench: $1 $2 rc=0 .* init=[0-9]" "$tmp/report"
	fi
}
med() { # ENGINE KERNEL FIELD: the median of FIELD over that pair's successful runs
	good "$1" "$2" | sed -n "s/.* $3=\([0-9.]*\).*/\1/p" | median
}
echo "arm64 boot, $RUNS runs each, one vCPU, 256 MiB (nested arm64 host under TCG; medians):"
printf '%-14s %-7s %8s %8s %6s\n' engine kernel wall_s init_s failed
for p in "bulkhead-vmm debian" "qemu debian" "bulkhead-vmm ours" "session ours"; do
	set -- $p
	bad=$(($(grep -c "^bench: $1 $2 " "$tmp/report") - $(good "$1" "$2" | grep -c .)))
	printf '%-14s %-7s %8s %8s %6s\n' "$1" "$2" "$(med "$1" "$2" wall)" "$(med "$1" "$2" init || echo -)" "$bad"
done
awk -v a="$(med bulkhead-vmm debian wall)" -v b="$(med qemu debian wall)" \
	-v c="$(med bulkhead-vmm debian init)" -v d="$(med qemu debian init)" \
	'BEGIN { printf "Debian kernel, bulkhead-vmm / QEMU: launch to exit %.2f, guest uptime at /init %.2f\n", a / b, c / d }'
awk -v a="$(med bulkhead-vmm ours wall)" -v b="$(med bulkhead-vmm debian wall)" \
	'BEGIN { printf "bulkhead-vmm, our kernel / Debian kernel: launch to exit %.2f\n", a / b }'
awk -v a="$(med session ours wall)" -v b="$(med bulkhead-vmm ours wall)" \
	'BEGIN { printf "bulkhead run -- true / a bare bulkhead-vmm boot of our kernel: %.2f\n", a / b }'
