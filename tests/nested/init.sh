#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# L1's PID 1 (tests/nested/README.md). Stage 1 copies the initramfs into a tmpfs and
# switch_roots there (pivot_root, which the jail and virtiofsd use, refuses the initramfs root);
# stage 2 mounts what a host has (cgroup v2 included), loads the KVM modules, runs the plan named
# on the kernel command line (nested.plan=) with its report on the second serial port (ttyS1),
# and powers off. Anything unexpected ends L1 at once: the host side reports what it saw.
PATH=/usr/sbin:/usr/bin
export PATH

fail() {
	echo "nested init: $*" > /dev/ttyS1
	echo "nested init: $*" > /dev/console
	echo o > /proc/sysrq-trigger
	sleep 10
}

if [ "${1:-}" != stage2 ]; then
	. /bulkhead/tests/nested/tmpfs_root.sh
	tmpfs_root fail
fi

mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
mkdir -p /dev/pts /dev/shm
mount -t devpts -o ptmxmode=0666,mode=0620 devpts /dev/pts
mount -t tmpfs -o mode=1777 shm /dev/shm
mount -t cgroup2 cgroup2 /sys/fs/cgroup || fail "cannot mount cgroup v2"
# Every controller for the children of the root, as systemd would.
for c in $(cat /sys/fs/cgroup/cgroup.controllers); do echo "+$c"; done |
	while read -r c; do echo "$c" > /sys/fs/cgroup/cgroup.subtree_control 2> /dev/null; done
hostname l1
ip link set lo up
for m in $(cat /usr/lib/nested/modules.order); do
	insmod "/usr/lib/nested/$m.ko" || fail "insmod $m failed"
done
[ -c /dev/kvm ] || fail "no /dev/kvm after loading $(cat /usr/lib/nested/modules.order)"
chgrp kvm /dev/kvm && chmod 0660 /dev/kvm # as Debian's udev rules leave it

plan=
for w in $(cat /proc/cmdline); do
	case $w in nested.plan=*) plan=${w#nested.plan=} ;; esac
done
export HOME=/root TMPDIR=/tmp BUILD=build
# The suites know they run inside L1 (test_exec.sh says so when L1's emulated SVM fails).
export BULKHEAD_L1=1
cd /bulkhead || fail "no /bulkhead"
sh tests/nested/l1-run.sh "$plan" > /dev/ttyS1 2>&1
sync
echo o > /proc/sysrq-trigger
sleep 10
