# SPDX-License-Identifier: Apache-2.0
# The guest kernel, built once per config/source/compiler and cached outside the tree:
# vmlinux and bzImage on x86_64, Image on arm64 (`make ARCH=arm64`).
ifeq ($(ARCH),arm64)
KERNEL_ARCH := arm64
KERNEL_OUT  := $(LIBDIR)/Image $(LIBDIR)/gen_init_cpio
else
KERNEL_ARCH := x86_64
KERNEL_OUT  := $(LIBDIR)/vmlinux $(LIBDIR)/bzImage $(LIBDIR)/gen_init_cpio
endif

$(KERNEL_OUT) &: kernel-config/bulkhead.config kernel-config/$(KERNEL_ARCH).config \
                 kernel-config/build.sh kernel-config/compile.sh | build-deps
	sh kernel-config/build.sh --arch $(KERNEL_ARCH) $(LIBDIR)
	@touch $(KERNEL_OUT)

ALL_TARGETS += $(KERNEL_OUT)
