#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (bench/nested.sh boots it): where a session's boot goes under bulkhead-vmm on a KVM
# with hardware semantics. (1) `bulkhead bench boot` with both engines: bulkhead-vmm, and QEMU
# -accel kvm booting the same kernel and image beside it. (2) The kernel's own clock for the
# costs that nesting makes visible: unpacking the initramfs (the session image against the base
# image) and the i8042 probe, booting bulkhead-vmm directly with the session's kernel command
# line. Figures are relative: L1 runs under TCG.
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
B=$BUILD/bin/bulkhead
VMM=$BUILD/bin/bulkhead-vmm
LIB=$BUILD/lib/bulkhead
RUNS=${RUNS:-5}
TMP=$(mktemp -d /tmp/nested-boot.XXXXXX)

echo "== bulkhead bench boot -n $RUNS --engine kvm"
"$B" bench boot -n "$RUNS" --engine kvm
echo "== bulkhead bench boot -n $RUNS --engine qemu (QEMU 10 -accel kvm, same kernel and image)"
"$B" bench boot -n "$RUNS" --engine qemu

# boot VMM IMAGE: one boot of the session kernel with IMAGE under VMM (the session's kernel
# command line, not quiet); prints "unpack_ms i8042_ms init_s" from the kernel's own clock:
# unpacking the initramfs (async, beside the other initcalls), the i8042 probe (from the line
# before i8042's first line to its "serio: i8042 KBD port" line: the controller and aux checks
# print nothing between), and "Run /init".
boot() {
	"$1" --kernel "$LIB/vmlinux" --initrd "$2" --mem 256 --timeout-ms 120000 --cmdline \
		"console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=k rdinit=/init tsc=reliable no_timer_check" \
		> "$TMP/con" 2> "$TMP/err" < /dev/null
	awk '
		function t(line) { sub(/^\[ */, "", line); sub(/\].*/, "", line); return line + 0 }
		/^\[/ && /i8042/ && !i0 { i0 = prev; i1 = t($0) }
		/^\[/ && /serio: i8042 KBD port/ { i1 = t($0) }
		/^\[/ { prev = t($0) }
		/Unpacking initramfs/ { u0 = t($0) }
		/Freeing initrd memory/ { u1 = t($0) }
		/Run \/init as init process/ { r = t($0) }
		END { printf "%.0f %.0f %.2f\n", (u1 - u0) * 1000, (i1 - i0) * 1000, r }' "$TMP/con"
}
# A bulkhead-vmm from before a change, put beside this one by hand (bulkhead-vmm-before), is
# measured the same way, boots alternating: before and after in one L1.
echo "== kernel clock, $RUNS boots each: initramfs unpack (ms), i8042 probe (ms), 'Run /init' (s)"
set -- "$VMM initramfs-base.cpio" "$VMM initramfs.cpio"
[ -x "$VMM-before" ] && set -- "$@" "$VMM-before initramfs.cpio"
n=0
for run in "$@"; do n=$((n + 1)); : > "$TMP/u$n"; : > "$TMP/i$n"; : > "$TMP/r$n"; done
i=0
while [ $i -lt "$RUNS" ]; do
	n=0
	for run in "$@"; do
		n=$((n + 1))
		boot "${run% *}" "$LIB/${run#* }" > "$TMP/one"
		read -r u i8 r < "$TMP/one"
		echo "$u" >> "$TMP/u$n"; echo "$i8" >> "$TMP/i$n"; echo "$r" >> "$TMP/r$n"
		[ $i -eq 0 ] && grep -B1 -m1 'i8042' "$TMP/con" | sed "s|^|  (${run##*/}) |"
	done
	i=$((i + 1))
done
n=0
for run in "$@"; do
	n=$((n + 1))
	vmm=${run% *} img=${run#* }
	printf '%-20s %-20s %6s KiB  unpack p50 %6s ms  i8042 p50 %6s ms  Run /init p50 %5s s\n' "${vmm##*/}" "$img" \
		"$(($(wc -c < "$LIB/$img") / 1024))" "$(median "$TMP/u$n")" "$(median "$TMP/i$n")" "$(median "$TMP/r$n")"
done
rm -rf "$TMP"
