#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/vmm-startup.sh: VMM start-up — from exec to the guest's first instruction (a guest
# whose first instruction writes the serial port; bench/vmm/first_byte.c times the byte),
# median of RUNS (>= 20) for bulkhead-vmm and for qemu-system-x86_64 -M microvm starting a
# comparable guest (a PVH ELF doing the same), measured in the same run. Goals: bulkhead-vmm
# median <= 5 ms and <= 1/5 of QEMU's.
set -u
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
RUNS=${RUNS:-20}
[ "$RUNS" -lt 20 ] && RUNS=20
FB=$BUILD/bench/first-byte
VMM=$BUILD/bin/bulkhead-vmm
GUEST=$BUILD/lib/bulkhead/guests/first.bin
PVH=$BUILD/bench/first_pvh.elf
for f in "$FB" "$VMM" "$GUEST" "$PVH"; do
	[ -e "$f" ] || { echo "vmm-startup: $f missing (run 'make bench-vmm')" >&2; exit 1; }
done

# QEMU's accelerator: KVM where its firmware runs (doctor: native), else TCG, said plainly.
accel=tcg
if "$BUILD/bin/bulkhead" doctor 2>/dev/null | grep -q '^guest kernel mode: native'; then accel=kvm; fi
qemu() {
	"$FB" qemu-system-x86_64 -M microvm,acpi=off,x-option-roms=off,rtc=off,pit=off,pic=off,isa-serial=on \
		-accel $accel -nodefaults -no-user-config -display none -monitor none \
		-serial stdio -m 16 -kernel "$PVH" -device isa-debug-exit,iobase=0xf4
}
vmm() { "$FB" "$VMM" --test-guest "$GUEST" --mem 16; }

# ms: nanoseconds on stdin in ms with two decimals. minimum FILE: FILE's least, so.
ms() { awk '{ printf "%.2f", $1 / 1e6 }'; }
minimum() { sort -n "$1" | head -n 1 | ms; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"' EXIT
vmm > /dev/null; qemu > /dev/null # warm the page cache for both
i=0
while [ $i -lt "$RUNS" ]; do
	# Interleaved, so a noisy neighbour hurts both alike.
	vmm >> "$tmp/vmm" || exit 1
	qemu >> "$tmp/qemu" || exit 1
	i=$((i + 1))
done
v=$(median "$tmp/vmm" | ms); q=$(median "$tmp/qemu" | ms)
echo "VMM start-up: exec -> guest's first instruction, $RUNS runs each (ms)"
printf '%-34s %8s %8s\n' "" median min
printf '%-34s %8s %8s\n' "bulkhead-vmm (KVM)" "$v" "$(minimum "$tmp/vmm")"
printf '%-34s %8s %8s\n' "qemu -M microvm ($accel)" "$q" "$(minimum "$tmp/qemu")"
awk -v v="$v" -v q="$q" 'BEGIN { printf "ratio bulkhead-vmm / qemu: %.3f (goal <= 0.2); goal median <= 5 ms: %s\n", v / q, (v <= 5 ? "met" : "missed") }'
