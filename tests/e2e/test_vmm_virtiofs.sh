#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end under KVM: bulkhead-vmm's virtio-mmio transport and vhost-user front end
# carry real FUSE traffic to Debian's virtiofsd. The kernel mounts the share as its
# root (rootfstype=virtiofs root=work) before any user space runs, then reads the
# init program from it — which works even where KVM cannot run guest user space.
# Checked from the host side: the console says the root is mounted, and the init
# file's access time (set to 2001 first) moved, so virtiofsd really read it.
. "$(dirname "$0")/lib.sh"

vfsd=/usr/lib/qemu/virtiofsd
if [ ! -e /dev/kvm ] || [ ! -x "$vfsd" ] || [ "$(id -u)" -ne 0 ]; then
	skip "virtio-fs root under bulkhead-vmm" "needs /dev/kvm, $vfsd and root (tests/nested runs this suite inside L1)"; plan_done; exit 0
fi

root=$TMP/root
mkdir -p "$root/sbin"
printf '#!/bin/sh\necho never runs here\n' > "$root/sbin/probe-init"
chmod 755 "$root/sbin/probe-init"
touch -a -d '2001-01-01 00:00:00' "$root/sbin/probe-init"
before=$(stat -c %X "$root/sbin/probe-init")

"$vfsd" --socket-path="$TMP/fs.sock" -o source="$root" -o sandbox=namespace -o cache=none \
	-o log_level=warn > "$TMP/vfsd.log" 2>&1 &
vpid=$!
wait_socket "$TMP/fs.sock" 5

# Emulating hosts need the kernel parameters bulkhead adds for them (docs/HOSTS.md).
quirks=""
"$BULKHEAD" doctor 2>/dev/null | grep -q '^guest kernel mode: emulated' &&
	quirks="noxsave clearcpuid=smap,smep,pku,umip,popcnt"
timeout 900 "$BIN/bulkhead-vmm" --kernel "$LIBDIR/vmlinux" --mem 256 \
	--cmdline "console=ttyS0 panic=-1 reboot=k $quirks rootfstype=virtiofs root=work rw init=/sbin/probe-init" \
	--virtio-fs "$TMP/fs.sock,tag=work" > "$TMP/console" 2> "$TMP/vmm.err"
rc=$?
kill "$vpid" 2>/dev/null
wait "$vpid" 2>/dev/null

if grep -q 'VFS: Mounted root (virtiofs filesystem)' "$TMP/console"; then
	ok "the kernel mounts the virtio-fs share as its root through bulkhead-vmm"
else
	not_ok "the kernel mounts the virtio-fs share as its root through bulkhead-vmm" \
		"rc=$rc" "$(grep -iE 'virtio|VFS|fuse|panic' "$TMP/console" | tail -n 5)" "$(cat "$TMP/vmm.err")"
fi
if grep -q 'Run /sbin/probe-init as init process' "$TMP/console"; then
	ok "the kernel finds its init program on the share"
else
	not_ok "the kernel finds its init program on the share" "$(tail -n 5 "$TMP/console")"
fi
after=$(stat -c %X "$root/sbin/probe-init")
if [ "$after" -gt "$before" ]; then
	ok "virtiofsd read the init file for the guest (its atime moved)"
else
	not_ok "virtiofsd read the init file for the guest (its atime moved)" "atime $before -> $after"
fi
check_eq "bulkhead-vmm ends cleanly when the guest resets" 0 "$rc"
plan_done
