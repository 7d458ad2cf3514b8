# SPDX-License-Identifier: Apache-2.0
# Sourced by the nested hosts' /init (init.sh, arm64_l1_init.sh, bench/arm64-boot-l1.sh) in
# their first stage. tmpfs_root FAIL copies the initramfs into a tmpfs and switch_roots into it,
# running /init again with "stage2" (pivot_root, which the jail and virtiofsd use, refuses the
# initramfs root). FAIL is the command called with the reason when a step fails.
tmpfs_root() {
	mount -t proc proc /proc || $1 "cannot mount /proc"
	mount -t devtmpfs dev /dev || $1 "cannot mount /dev"
	mkdir -p /newroot
	mount -t tmpfs -o mode=0755 root /newroot || $1 "cannot mount the tmpfs root"
	for e in /*; do
		case $e in /proc | /dev | /sys | /newroot) mkdir -p "/newroot$e" ;;
		*) cp -a "$e" /newroot/ || $1 "cannot copy $e into the tmpfs root" ;; esac
	done
	umount /dev
	umount /proc
	exec switch_root /newroot /init stage2
	$1 "switch_root failed"
}

# busybox_stage1 TAG: the first stage of a host with busybox only (the arm64 host, its bench):
# the applets installed, then tmpfs_root; a failure is printed as "TAG: WHY" and powers off.
busybox_stage1() {
	/bin/busybox --install -s /bin
	stage1_tag=$1
	stage1_fail() {
		echo "$stage1_tag: $*"
		poweroff -f
	}
	tmpfs_root stage1_fail
}
