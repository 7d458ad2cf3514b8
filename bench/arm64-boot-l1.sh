#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the arm64 host for bench/arm64-boot.sh: boots one kernel and initramfs (/l2: the
# host's own Debian kernel, a busybox /init that prints its uptime and powers off) RUNS times
# under bulkhead-vmm and under QEMU -M virt -accel kvm, alternating, one vCPU and 256 MiB
# each, and prints "bench: ENGINE rc=N wall=S init=S" per boot: wall from launch to exit (the
# host's clock), init the guest's own uptime at its /init.
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
runs=$(sed -n 's/.*bench.runs=\([0-9]*\).*/\1/p' /proc/cmdline)
up() { cut -d' ' -f1 /proc/uptime; }
Q=/q # bookworm's arm64 QEMU and its libraries, through their own loader
qemu() {
	"$Q/lib/ld-linux-aarch64.so.1" --library-path "$Q/lib/aarch64-linux-gnu:$Q/usr/lib/aarch64-linux-gnu" \
		"$Q/usr/bin/qemu-system-aarch64" "$@"
}
ARGS="rdinit=/init panic=-1 quiet"
one() { # ENGINE
	t0=$(up)
	case $1 in
	bulkhead-vmm)
		bulkhead-vmm --kernel /l2/Image --initrd /l2/initrd.gz --mem 256 --cpus 1 \
			--timeout-ms 300000 --cmdline "console=ttyS0 $ARGS" > /tmp/out 2>&1 ;;
	qemu)
		qemu -M virt,gic-version=3 -accel kvm -cpu host -m 256 -smp 1 -nodefaults \
			-no-user-config -display none -serial stdio -no-reboot -kernel /l2/Image \
			-initrd /l2/initrd.gz -append "console=ttyAMA0 $ARGS" > /tmp/out 2>&1 ;;
	esac
	rc=$?
	t1=$(up)
	init=$(sed -n 's/^L2: .* uptime \([0-9.]*\).*/\1/p' /tmp/out | head -n 1)
	echo "bench: $1 rc=$rc wall=$(awk "BEGIN { print $t1 - $t0 }") init=${init:-none}"
	[ -n "$init" ] || tail -n 5 /tmp/out | sed 's/^/bench: | /'
}
i=0
while [ "$i" -lt "${runs:-5}" ]; do
	one bulkhead-vmm
	one qemu
	i=$((i + 1))
done
echo "bench: done"
poweroff -f
