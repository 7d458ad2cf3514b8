#!/bin/sh
# Prints the gen_init_cpio list for the guest's initramfs: bulkhead-init as /init,
# busybox with a link per applet, and the few /etc files programs expect.
# Usage: initramfs/list.sh INIT BUSYBOX
set -eu
init=${1:?usage: list.sh INIT BUSYBOX}
busybox=${2:?usage: list.sh INIT BUSYBOX}
here=$(cd "$(dirname "$0")" && pwd)

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
LIST
"$busybox" --list-full | sort | while IFS= read -r applet; do
	[ "$applet" = bin/busybox ] && continue
	echo "slink /$applet /bin/busybox 0777 0 0"
done
