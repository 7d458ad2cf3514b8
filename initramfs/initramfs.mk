# SPDX-License-Identifier: Apache-2.0
# initramfs/: the guest's early user space, written without root by gen_init_cpio.
# Uncompressed on purpose: the kernel needs no decompressor and boot skips that step.
# Two images: initramfs.cpio, what sessions boot (init, busybox and the tools layer: curl
# and git with their libraries, copied from this host, so a package upgrade rebuilds it), and
# initramfs-base.cpio (init and busybox only) for boot measurements and emulated-KVM tests.
# Cross-built for arm64, the tools layer is left out (it copies this host's curl and git):
# there both images are init and busybox (busybox-static from the arm64 sysroot).
INITRAMFS      := $(LIBDIR)/initramfs.cpio
INITRAMFS_BASE := $(LIBDIR)/initramfs-base.cpio
ifdef ARM64_SYSROOT
BUSYBOX        ?= $(ARM64_SYSROOT)/bin/busybox
INITRAMFS_LAYER := base
export BUSYBOX_RUN := $(ARM64_PKGS)/usr/bin/qemu-aarch64-static
else
BUSYBOX        ?= /bin/busybox
INITRAMFS_LAYER := tools
endif
INITRAMFS_DEPS := initramfs/list.sh initramfs/etc/passwd initramfs/etc/group $(GUEST_INIT) \
                  $(wildcard guest/runtime/*) \
                  $(LIBDIR)/gen_init_cpio

$(INITRAMFS): $(INITRAMFS_DEPS) initramfs/tools-layer.sh $(wildcard /usr/bin/curl /usr/bin/git) \
              | build-deps
	sh initramfs/list.sh $(INITRAMFS_LAYER) $(GUEST_INIT) $(BUSYBOX) > $@.list
	$(LIBDIR)/gen_init_cpio -t 0 $@.list > $@.tmp
	@rm -f $@.list
	@mv $@.tmp $@

$(INITRAMFS_BASE): $(INITRAMFS_DEPS) | build-deps
	sh initramfs/list.sh base $(GUEST_INIT) $(BUSYBOX) > $@.list
	$(LIBDIR)/gen_init_cpio -t 0 $@.list > $@.tmp
	@rm -f $@.list
	@mv $@.tmp $@

ALL_TARGETS += $(INITRAMFS) $(INITRAMFS_BASE)
