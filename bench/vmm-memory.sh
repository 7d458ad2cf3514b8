#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/vmm-memory.sh: bulkhead-vmm's own memory — its RSS beyond the guest RAM the guest
# touched. A test guest touches 32 MiB and says so; we then read /proc/PID/smaps and split
# the RSS into the guest-RAM memfd mapping and everything else. Goal: everything else
# <= 3 MiB (Firecracker publishes <= 5 MiB). QEMU microvm's total RSS for the same guest
# RAM size is printed beside it as the reference.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
VMM=$BUILD/bin/bulkhead-vmm
GUEST=$BUILD/lib/bulkhead/guests/touch.bin
PVH=$BUILD/bench/first_pvh.elf
[ -x "$VMM" ] && [ -f "$GUEST" ] || { echo "vmm-memory: build first (make bench-vmm)" >&2; exit 1; }

tmp=$(mktemp -d); trap 'rm -rf "$tmp"; [ -n "${pid:-}" ] && kill $pid 2>/dev/null' EXIT
mkfifo "$tmp/out"
"$VMM" --test-guest "$GUEST" --mem 64 --timeout-ms 60000 > "$tmp/out" 2> /dev/null &
pid=$!
read -r line < "$tmp/out"
[ "$line" = "touched 32" ] || { echo "vmm-memory: guest said '$line'" >&2; exit 1; }
# kB per mapping: the memfd is "/memfd:bulkhead-guest-ram (deleted)".
awk '/^[0-9a-f]+-[0-9a-f]+ / { guest = ($0 ~ /bulkhead-guest-ram/) }
     /^Rss:/ { if (guest) g += $2; else o += $2 }
     END { printf "%d %d\n", g, o }' "/proc/$pid/smaps" > "$tmp/rss"
kill $pid; wait $pid 2>/dev/null; pid=
read -r guest other < "$tmp/rss"

# Reference: QEMU's whole RSS with the same 64 MiB guest, idle in its halt loop.
qref=-
if command -v qemu-system-x86_64 > /dev/null && [ -f "$PVH" ]; then
	qemu-system-x86_64 -M microvm,acpi=off,x-option-roms=off,rtc=off,pit=off,pic=off,isa-serial=on \
		-accel tcg -nodefaults -no-user-config -display none -monitor none -serial none \
		-m 64 -kernel "$PVH" > /dev/null 2>&1 &
	qpid=$!
	sleep 2
	qref=$(awk '/^VmRSS:/ { printf "%.1f", $2 / 1024 }' "/proc/$qpid/status" 2>/dev/null)
	kill $qpid 2>/dev/null; wait $qpid 2>/dev/null
fi
echo "VMM memory (guest touched 32 MiB of 64 MiB; MiB)"
awk -v g="$guest" -v o="$other" -v q="$qref" 'BEGIN {
	printf "bulkhead-vmm guest RAM resident:     %6.1f\n", g / 1024
	printf "bulkhead-vmm RSS beyond guest RAM:   %6.1f  (goal <= 3.0: %s)\n", o / 1024, (o / 1024 <= 3 ? "met" : "missed")
	printf "qemu -M microvm (tcg) total RSS:     %6s  (reference, idle guest)\n", q
}'
