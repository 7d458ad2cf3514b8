#!/bin/busybox sh
# SPDX-License-Identifier: Apache-2.0
# /init of the guest the arm64 bulkhead-vmm boots (tests/nested/arm64.sh): says what it
# sees (the run's token from its command line, its vCPUs) and powers off through PSCI.
/bin/busybox mount -t proc proc /proc
t=$(/bin/busybox sed -n 's/.*bulkhead.token=\([0-9a-f]*\).*/\1/p' /proc/cmdline)
n=$(/bin/busybox grep -c '^processor' /proc/cpuinfo)
echo "L2: token $t cpus $n uptime $(/bin/busybox cut -d' ' -f1 /proc/uptime)"
/bin/busybox poweroff -f
