#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The guest artefacts `make` produces: kernel images of the right kind, a config
# that kept what the fragment asked for, an initramfs holding init and busybox.
. "$(dirname "$0")/lib.sh"

if [ ! -f "$LIBDIR/vmlinux" ]; then
	skip "guest artefacts" "not built (run make)"; plan_done; exit 0
fi

case $(od -An -N4 -c "$LIBDIR/vmlinux" | tr -d ' ') in
'177ELF') ok "vmlinux is an ELF file" ;;
*) not_ok "vmlinux is an ELF file" ;;
esac
# QEMU enters the ELF through its PVH note (Xen ELF note type 18).
if readelf -n "$LIBDIR/vmlinux" 2>/dev/null | grep -q 'Xen.*0x00000012'; then
	ok "vmlinux carries a PVH entry note"
else
	not_ok "vmlinux carries a PVH entry note" "$(readelf -n "$LIBDIR/vmlinux" 2>&1 | head -n 5)"
fi
check_eq "bzImage has the boot protocol magic" "HdrS" "$(dd if="$LIBDIR/bzImage" bs=1 skip=514 count=4 2>/dev/null)"

cfg=$LIBDIR/config
for opt in CONFIG_64BIT=y CONFIG_SMP=y CONFIG_VIRTIO_MMIO_CMDLINE_DEVICES=y CONFIG_VIRTIO_FS=y \
	CONFIG_VIRTIO_VSOCKETS=y CONFIG_SERIAL_8250_CONSOLE=y CONFIG_DEVTMPFS=y CONFIG_TMPFS=y \
	CONFIG_BLK_DEV_INITRD=y; do
	grep -qx "$opt" "$cfg" && ok "kernel config has $opt" || not_ok "kernel config has $opt"
done
for opt in CONFIG_MODULES CONFIG_PCI CONFIG_ACPI CONFIG_IPV6 CONFIG_BLOCK; do
	grep -q "^$opt=y" "$cfg" && not_ok "kernel config leaves $opt off" || ok "kernel config leaves $opt off"
done

list=$(cpio -it < "$LIBDIR/initramfs.cpio" 2>/dev/null)
for f in init bin/busybox bin/sh dev/console etc/passwd; do
	printf '%s\n' "$list" | grep -qx "$f" && ok "initramfs holds /$f" || not_ok "initramfs holds /$f"
done
# A dynamic executable names its loader in a PT_INTERP header; the guest has none.
if readelf -lW "$LIBDIR/bulkhead-init" | grep -q 'LOAD' &&
	! readelf -lW "$LIBDIR/bulkhead-init" | grep -q 'INTERP'; then
	ok "bulkhead-init is static"
else
	not_ok "bulkhead-init is static" "$(readelf -lW "$LIBDIR/bulkhead-init" | grep -E 'INTERP|Type')"
fi

plan_done
