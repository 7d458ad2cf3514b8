#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the guest the arm64 bulkhead-vmm boots (tests/nested/arm64.sh): says what it
# sees (the run's token from its command line, its vCPUs) and powers off through PSCI. With
# bulkhead.share on its command line it first mounts the virtio-fs share "share" (the
# kernel's modules from /modules), reads /in there and writes /out.
/bin/busybox mount -t proc proc /proc
t=$(/bin/busybox sed -n 's/.*bulkhead.token=\([0-9a-f]*\).*/\1/p' /proc/cmdline)
n=$(/bin/busybox grep -c '^processor' /proc/cpuinfo)
echo "L2: token $t cpus $n uptime $(/bin/busybox cut -d' ' -f1 /proc/uptime)"
if /bin/busybox grep -q bulkhead.share /proc/cmdline; then
	while read -r m; do /bin/busybox insmod "/modules/$m.ko"; done < /modules/modules.order
	if /bin/busybox mount -t virtiofs share /mnt; then
		echo "L2: share read $(/bin/busybox cat /mnt/in)"
		echo "written by L2 $t" > /mnt/out
		/bin/busybox umount /mnt
	fi
fi
/bin/busybox poweroff -f
