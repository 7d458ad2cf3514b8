# SPDX-License-Identifier: Apache-2.0
# The guest kernel, built once per config/source/compiler and cached outside the tree.
KERNEL_OUT := $(LIBDIR)/vmlinux $(LIBDIR)/bzImage $(LIBDIR)/gen_init_cpio

$(KERNEL_OUT) &: kernel-config/bulkhead.config kernel-config/build.sh kernel-config/compile.sh | build-deps
	sh kernel-config/build.sh $(LIBDIR)
	@touch $(KERNEL_OUT)

ALL_TARGETS += $(KERNEL_OUT)
