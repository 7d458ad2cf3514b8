#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Prints the gen_init_cpio list for the guest's initramfs: bulkhead-init as /init,
# busybox with a link per applet, the few /etc files programs expect, and the tools
# layer (curl, git and their libraries: tools-layer.sh), and guest/runtime/ (what image
# sessions' runtimes preload) at /usr/lib/bulkhead. One entry per path.
# The last entry, /etc/bulkhead-image -> base|tools, tells bulkhead-init the archive was
# unpacked to its end (a guest too small for it gets a partial root and a clear error).
# Usage: [BUSYBOX_RUN=EMULATOR] initramfs/list.sh base|tools INIT BUSYBOX
set -eu
export LC_ALL=C
image=${1:?usage: list.sh base|tools INIT BUSYBOX}
init=${2:?usage: list.sh base|tools INIT BUSYBOX}
busybox=${3:?usage: list.sh base|tools INIT BUSYBOX}
here=$(cd "$(dirname "$0")" && pwd)
case $image in
base) tools= ;;
tools) tools=$(sh "$here/tools-layer.sh") ;;
*) echo "list.sh: image must be base or tools" >&2; exit 2 ;;
esac
# BUSYBOX_RUN: how to run a busybox of another architecture here (qemu-aarch64-static).
applets=$(${BUSYBOX_RUN:-} "$busybox" --list-full | sort)
[ -n "$applets" ] || { echo "list.sh: $busybox listed no applets" >&2; exit 1; }

{
cat <<LIST
dir /dev 0755 0 0
nod /dev/console 0600 0 0 c 5 1
nod /dev/null 0666 0 0 c 1 3
dir /proc 0555 0 0
dir /sys 0555 0 0
dir /tmp 1777 0 0
dir /run 0755 0 0
dir /root 0700 0 0
dir /etc 0755 0 0
dir /bin 0755 0 0
dir /sbin 0755 0 0
dir /usr 0755 0 0
dir /usr/bin 0755 0 0
dir /usr/sbin 0755 0 0
file /init $init 0755 0 0
file /bin/busybox $busybox 0755 0 0
file /etc/passwd $here/etc/passwd 0644 0 0
file /etc/group $here/etc/group 0644 0 0
dir /usr/lib 0755 0 0
dir /usr/lib/bulkhead 0755 0 0
file /usr/lib/bulkhead/node-proxy.js $here/../guest/runtime/node-proxy.js 0644 0 0
LIST
for applet in $applets; do
	[ "$applet" = bin/busybox ] && continue
	echo "slink /$applet /bin/busybox 0777 0 0"
done
[ -z "$tools" ] || printf '%s\n' "$tools"
echo "slink /etc/bulkhead-image $image 0777 0 0"
} | awk ' # the tools layer repeats directories above; a path listed two ways is a bug
	!($2 in line) { line[$2] = $0; print; next }
	line[$2] != $0 { print "list.sh: two different entries for " $2 > "/dev/stderr"; exit 1 }'
