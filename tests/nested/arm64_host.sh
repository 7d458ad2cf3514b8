# SPDX-License-Identifier: Apache-2.0
# Sourced by tests/nested/arm64.sh and bench/arm64-boot.sh (each sets ARM64_NESTED to
# tests/nested first): the nested arm64 host, built and booted.

# arm64_vmm ABUILD: cross-builds the arm64 bulkhead-vmm into ABUILD (make ARCH=arm64); its
# output in ABUILD.log.
arm64_vmm() {
	mkdir -p "$1"
	make -s ARCH=arm64 BUILD="$1" "$1/bin/bulkhead-vmm" > "$1.log" 2>&1
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

# arm64_prog QROOT PROG DIR: copies PROG (a path inside QROOT, the arm64 packages'
# arm64-qemu/) into DIR/q at the same path, with the shared libraries it needs, found from
# each ELF's NEEDED entries, and the loader as /q/lib/ld-linux-aarch64.so.1, which runs it
# in the arm64 host (--library-path /q/lib/aarch64-linux-gnu:/q/usr/lib/aarch64-linux-gnu).
arm64_prog() {
	_q=$1 _dir=$3
	echo "$2" > "$_dir/.todo"
	: > "$_dir/.seen"
	while [ -s "$_dir/.todo" ]; do
		_f=$(head -n 1 "$_dir/.todo")
		sed -i 1d "$_dir/.todo"
		grep -qxF "$_f" "$_dir/.seen" && continue
		echo "$_f" >> "$_dir/.seen"
		mkdir -p "$_dir/q/$(dirname "$_f")"
		cp -L "$_q/$_f" "$_dir/q/$_f" || return 1
		aarch64-linux-gnu-objdump -p "$_q/$_f" | sed -n 's/^ *NEEDED *//p' | while read -r _n; do
			for _d in lib/aarch64-linux-gnu usr/lib/aarch64-linux-gnu; do
				if [ -e "$_q/$_d/$_n" ]; then
					echo "$_d/$_n" >> "$_dir/.todo"
					break
				fi
			done
		done
	done
	rm -f "$_dir/.todo" "$_dir/.seen"
	cp -L "$_q/lib/aarch64-linux-gnu/ld-linux-aarch64.so.1" "$_dir/q/lib/ld-linux-aarch64.so.1"
}
