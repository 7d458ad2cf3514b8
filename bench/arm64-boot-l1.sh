#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the arm64 host for bench/arm64-boot.sh. RUNS rounds; in each, alternating:
#   - the host's own Debian kernel (/l2/Image) with a busybox initramfs whose /init prints its
#     uptime and powers off, under bulkhead-vmm and under QEMU -M virt -accel kvm, one vCPU
#     and 256 MiB; our guest kernel (/bulkhead/lib/bulkhead/Image) the same way under
#     bulkhead-vmm only (its one console driver is the 8250; QEMU's virt machine has a PL011);
#   - a whole session, `bulkhead run --engine kvm -- true` (our kernel and initramfs, the
#     jail, the broker, the vsock back end).
# One line per run: "bench: ENGINE KERNEL rc=N wall=S init=S", wall from launch to exit (the
# host's clock), init the guest's own uptime at its /init (none for a session).
[ "${1:-}" = stage2 ] || { . /tmpfs_root.sh && busybox_stage1 bench; } # a tmpfs root, as the jail needs
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm /run /root /sys/fs/cgroup /tmp
mount -t devpts devpts /dev/pts
mount -t tmpfs shm /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do
	echo "+$c" > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null
done
ip link set lo up
export HOME=/root TMPDIR=/tmp
runs=$(sed -n 's/.*bench.runs=\([0-9]*\).*/\1/p' /proc/cmdline)
up() { cut -d' ' -f1 /proc/uptime; }
Q=/q # bookworm's arm64 QEMU and its libraries, through their own loader
qemu() {
	"$Q/lib/ld-linux-aarch64.so.1" --library-path "$Q/lib/aarch64-linux-gnu:$Q/usr/lib/aarch64-linux-gnu" \
		"$Q/usr/bin/qemu-system-aarch64" "$@"
}
ARGS="rdinit=/init panic=-1 quiet"
one() { # ENGINE KERNEL-NAME KERNEL
	t0=$(up)
	case $1 in
	bulkhead-vmm)
		bulkhead-vmm --kernel "$3" --initrd /l2/initrd.cpio --mem 256 --cpus 1 \
			--timeout-ms 300000 --cmdline "console=ttyS0 $ARGS" > /tmp/out 2>&1 ;;
	qemu)
		qemu -M virt,gic-version=3 -accel kvm -cpu host -m 256 -smp 1 -nodefaults \
			-no-user-config -display none -serial stdio -no-reboot -kernel "$3" \
			-initrd /l2/initrd.cpio -append "console=ttyAMA0 $ARGS" > /tmp/out 2>&1 ;;
	session)
		/bulkhead/bin/bulkhead run --engine kvm -- true > /tmp/out 2>&1 ;;
	esac
	rc=$?
	t1=$(up)
	init=$(sed -n 's/^L2: .* uptime \([0-9.]*\).*/\1/p' /tmp/out | head -n 1)
	echo "bench: $1 $2 rc=$rc wall=$(awk "BEGIN { print $t1 - $t0 }") init=${init:-none}"
	[ "$rc" = 0 ] && { [ -n "$init" ] || [ "$1" = session ]; } || tail -n 5 /tmp/out | sed 's/^/bench: | /'
}
i=0
while [ "$i" -lt "${runs:-5}" ]; do
	one bulkhead-vmm debian /l2/Image
	one qemu debian /l2/Image
	one bulkhead-vmm ours /bulkhead/lib/bulkhead/Image
	one session ours
	i=$((i + 1))
done
echo "bench: done"
poweroff -f
