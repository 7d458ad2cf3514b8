# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/nested/arm64.sh and bench/arm64-boot.sh (each sets ARM64_NESTED to
# tests/nested first): the nested arm64 host, built and booted.

# arm64_vmm ABUILD [all]: cross-builds the arm64 bulkhead-vmm (or, with `all`, everything and
# the test upstream https-echo) into ABUILD (make ARCH=arm64); its output in ABUILD.log.
arm64_vmm() {
	mkdir -p "$1"
	if [ "${2:-}" = all ]; then
		make -s ARCH=arm64 BUILD="$1" all "$1/tests/https-echo" > "$1.log" 2>&1
	else
		make -s ARCH=arm64 BUILD="$1" "$1/bin/bulkhead-vmm" > "$1.log" 2>&1
	fi
}

# arm64_tree PKGS VMM INIT DIR: DIR becomes the arm64 host's initramfs: busybox, VMM as
# /bin/bulkhead-vmm, INIT as /init, and the guest bulkhead-vmm boots: the same kernel
# (/l2/Image) with a busybox initramfs whose /init is arm64_l2_init.sh and the kernel's
# virtio-mmio and virtio-fs modules (/l2/initrd.gz).
arm64_tree() {
	for _d in "$4/l2tree" "$4"; do
		mkdir -p "$_d/bin" "$_d/proc" "$_d/sys" "$_d/dev" "$_d/tmp"
		cp "$1/arm64/bin/busybox" "$_d/bin/busybox"
	done
	cp "$ARM64_NESTED/arm64_l2_init.sh" "$4/l2tree/init"
	mkdir -p "$4/l2tree/modules" "$4/l2tree/mnt"
	cp "$1/l1/modules/"*.ko "$1/l1/modules.order" "$4/l2tree/modules/"
	cp "$3" "$4/init"
	cp "$ARM64_NESTED/tmpfs_root.sh" "$4/tmpfs_root.sh"
	chmod 755 "$4/l2tree/init" "$4/init"
	mkdir -p "$4/l2"
	arm64_cpio "$4/l2tree" "$4/l2/initrd.gz"
	rm -rf "$4/l2tree"
	cp "$1/l1/vmlinuz" "$4/l2/Image"
	cp "$2" "$4/bin/bulkhead-vmm"
}

# arm64_cpio DIR OUT: DIR as a gzip'd newc archive.
arm64_cpio() {
	(cd "$1" && find . | cpio -o -H newc 2> /dev/null | gzip -1 > "$2")
}

# arm64_boot PKGS GIC INITRAMFS REPORT APPEND: boots the arm64 host (QEMU 10's TCG, a virt
# machine with EL2 and a GICv$GIC, 2 vCPUs, 2 GiB) with INITRAMFS, its console (CR
# stripped) in REPORT, within 900 s. Returns QEMU's status.
arm64_boot() {
	LD_LIBRARY_PATH=$1/usr/lib/x86_64-linux-gnu timeout 900 \
		"$1/usr/bin/qemu-system-aarch64" -L "$1/usr/share/qemu" \
		-M "virt,virtualization=on,gic-version=$2" -cpu max -smp 2 -m 2048 \
		-nographic -no-reboot -kernel "$1/l1/vmlinuz" -initrd "$3" \
		-append "console=ttyAMA0 rdinit=/init panic=-1 quiet $5" < /dev/null > "$4.raw" 2>&1
	_rc=$?
	tr -d '\r' < "$4.raw" > "$4"
	rm -f "$4.raw"
	return $_rc
}

# arm64_libs ROOT ELF DEST: copies into DEST, at the same paths, the shared libraries ELF needs
# (its NEEDED entries, and theirs, found in ROOT's lib/ and usr/lib/aarch64-linux-gnu), and the
# loader as DEST/lib/ld-linux-aarch64.so.1.
arm64_libs() {
	_r=$1 _dest=$3
	aarch64-linux-gnu-objdump -p "$2" | sed -n 's/^ *NEEDED *//p' > "$_dest/.todo"
	: > "$_dest/.seen"
	while [ -s "$_dest/.todo" ]; do
		_lib=$(head -n 1 "$_dest/.todo")
		sed -i 1d "$_dest/.todo"
		grep -qxF "$_lib" "$_dest/.seen" && continue
		echo "$_lib" >> "$_dest/.seen"
		for _d in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
			[ -e "$_r/$_d/$_lib" ] || continue
			mkdir -p "$_dest/$_d"
			cp -L "$_r/$_d/$_lib" "$_dest/$_d/$_lib" || return 1
			aarch64-linux-gnu-objdump -p "$_r/$_d/$_lib" | sed -n 's/^ *NEEDED *//p' >> "$_dest/.todo"
			break
		done
	done
	rm -f "$_dest/.todo" "$_dest/.seen"
	mkdir -p "$_dest/lib"
	cp -L "$_r/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$_dest/lib/ld-linux-aarch64.so.1"
}

# arm64_prog QROOT PROG DIR: copies PROG (a path inside QROOT, the arm64 packages'
# arm64-qemu/) into DIR/q at the same path, with its libraries (arm64_libs), which runs it
# in the arm64 host through /q/lib/ld-linux-aarch64.so.1 (--library-path
# /q/lib/aarch64-linux-gnu:/q/usr/lib/aarch64-linux-gnu).
arm64_prog() {
	mkdir -p "$3/q/$(dirname "$2")"
	cp -L "$1/$2" "$3/q/$2" && arm64_libs "$1" "$1/$2" "$3/q"
}

# arm64_stack PKGS ABUILD DIR: the whole arm64 build (make ARCH=arm64 BUILD=ABUILD) in the
# arm64 host at /bulkhead (bin/: the CLI, bulkhead-vmm, -vsock, -broker; lib/bulkhead/: the
# guest kernel and initramfs; tests/https-echo if built), the libraries they load from the
# arm64 sysroot at their usual paths, Debian's arm64 virtiofsd at /usr/lib/qemu/virtiofsd,
# where the CLI looks, and /etc/hosts.
arm64_stack() {
	mkdir -p "$3/bulkhead/bin" "$3/bulkhead/lib/bulkhead" "$3/usr/lib/qemu" "$3/etc"
	# The broker resolves an upstream's name as any host program does.
	printf '127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n' > "$3/etc/hosts"
	printf 'passwd: files\ngroup: files\nhosts: files\n' > "$3/etc/nsswitch.conf"
	for _p in bulkhead bulkhead-vmm bulkhead-vsock bulkhead-broker; do
		cp "$2/bin/$_p" "$3/bulkhead/bin/$_p" && arm64_libs "$1/arm64" "$2/bin/$_p" "$3" || return 1
	done
	cp "$2/lib/bulkhead/Image" "$2/lib/bulkhead/initramfs.cpio" "$2/lib/bulkhead/initramfs-base.cpio" \
		"$3/bulkhead/lib/bulkhead/" || return 1
	if [ -x "$2/tests/https-echo" ]; then
		mkdir -p "$3/bulkhead/tests"
		cp "$2/tests/https-echo" "$3/bulkhead/tests/" &&
			arm64_libs "$1/arm64" "$2/tests/https-echo" "$3" || return 1
	fi
	cp -L "$1/arm64-qemu/usr/lib/qemu/virtiofsd" "$3/usr/lib/qemu/virtiofsd" &&
		arm64_libs "$1/arm64-qemu" "$1/arm64-qemu/usr/lib/qemu/virtiofsd" "$3"
}
