# initramfs/: the guest's early user space, written without root by gen_init_cpio.
# Uncompressed on purpose: the kernel needs no decompressor and boot skips that step.
INITRAMFS := $(LIBDIR)/initramfs.cpio
BUSYBOX   ?= /bin/busybox

$(INITRAMFS): initramfs/list.sh initramfs/etc/passwd initramfs/etc/group $(GUEST_INIT) \
              $(LIBDIR)/gen_init_cpio | deps
	sh initramfs/list.sh $(GUEST_INIT) $(BUSYBOX) > $@.list
	$(LIBDIR)/gen_init_cpio -t 0 $@.list > $@.tmp
	@rm -f $@.list
	@mv $@.tmp $@

ALL_TARGETS += $(INITRAMFS)
