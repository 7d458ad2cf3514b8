#!/bin/sh
# Inside L1 (bench/nested.sh boots it): where a session's boot goes under bulkhead-vmm on a KVM
# with hardware semantics. (1) `bulkhead bench boot` with both engines: bulkhead-vmm, and QEMU
# -accel kvm booting the same kernel and image beside it. (2) The kernel's own clock for the
# costs that nesting makes visible: unpacking the initramfs (the session image against the base
# image) and the i8042 probe (initcall_debug), booting bulkhead-vmm directly with the session's
# kernel command line. Figures are relative: L1 runs under TCG.
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

# boot IMAGE: one boot of the session kernel with IMAGE under bulkhead-vmm, with initcall_debug;
# prints "unpack_ms i8042_ms init_s" from the kernel's own timestamps.
boot() {
	"$VMM" --kernel "$LIB/vmlinux" --initrd "$1" --mem 256 --timeout-ms 120000 --cmdline \
		"console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=k rdinit=/init tsc=reliable no_timer_check initcall_debug" \
		> "$TMP/con" 2> "$TMP/err" < /dev/null
	awk '
		function t(line) { sub(/^\[ */, "", line); sub(/\].*/, "", line); return line + 0 }
		/Unpacking initramfs/ { u0 = t($0) }
		/Freeing initrd memory/ { u1 = t($0) }
		/initcall i8042_init.* returned .* after [0-9]+ usecs/ { for (i = 1; i <= NF; i++) if ($i == "after") i8 = $(i + 1) / 1000 }
		/Run \/init as init process/ { r = t($0) }
		END { printf "%.0f %.0f %.2f\n", (u1 - u0) * 1000, i8, r }' "$TMP/con"
}
echo "== kernel clock, bulkhead-vmm, $RUNS boots each: initramfs unpack (ms), i8042_init (ms), 'Run /init' (s)"
for img in initramfs-base.cpio initramfs.cpio; do
	: > "$TMP/u"; : > "$TMP/i"; : > "$TMP/r"
	i=0
	while [ $i -lt "$RUNS" ]; do
		set -- $(boot "$LIB/$img")
		echo "$1" >> "$TMP/u"; echo "$2" >> "$TMP/i"; echo "$3" >> "$TMP/r"
		i=$((i + 1))
	done
	printf '%-22s %6s KiB  unpack p50 %6s ms  i8042 p50 %6s ms  Run /init p50 %5s s\n' "$img" \
		"$(($(wc -c < "$LIB/$img") / 1024))" "$(median "$TMP/u")" "$(median "$TMP/i")" "$(median "$TMP/r")"
done
grep -m1 'i8042' "$TMP/con" | sed 's/^/last boot: /'
rm -rf "$TMP"
