# SPDX-License-Identifier: Apache-2.0
# vmm/: bulkhead-vmm, the KVM microVM monitor. Everything but main.c and the allow-lists goes
# into $(VMM_LIB) so unit tests (tests/unit/test_vmm_*.c) can call the VMM's pieces directly.
# The architecture it is built for, from the compiler's target: x86 (vmm/x86/) or arm64
# (vmm/arm64/; `make ARCH=arm64` cross-builds it, see README.md). Each implements
# vmm/machine_arch.h and the arch hooks of vmm/vm.h and vmm/vcpu.h. vmm/snapshot_vm.c is x86's
# (arm64 refuses snapshots: vmm/arm64/snapshot_vm.c).
VMM_ARCH := $(if $(filter aarch64%,$(shell $(CC) -dumpmachine)),arm64,x86)
VMM_SECCOMP_OBJS := $(OBJ)/vmm/seccomp.o $(OBJ)/vmm/$(VMM_ARCH)/seccomp_arch.o
VMM_SRCS := $(filter-out vmm/main.c vmm/seccomp.c vmm/$(VMM_ARCH)/seccomp_arch.c \
              $(if $(filter arm64,$(VMM_ARCH)),vmm/snapshot_vm.c),\
              $(wildcard vmm/*.c vmm/$(VMM_ARCH)/*.c vmm/virtio/*.c))
VMM_LIB  := $(OBJ)/libvmm.a
VMM_LIBS := -lseccomp -lz $(if $(filter arm64,$(VMM_ARCH)),-lfdt)

$(VMM_LIB): $(VMM_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# vmm/arm64/'s plain-data pieces (its device tree with libfdt, the Image header and boot
# layout), built on an x86 host too: unit-tested there (tests/unit/test_vmm_arm64.c).
VMM_ARM64_SRCS := vmm/arm64/fdt.c vmm/arm64/image.c
VMM_ARM64_LIB  := $(OBJ)/libvmm_arm64.a

$(VMM_ARM64_LIB): $(VMM_ARM64_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# Static: it can run in an empty root (descriptors for every file, see vmm/README.md), with
# no loader or libraries to find. (Dynamic in a sanitizer build: see SAN in the Makefile.)
$(BIN)/bulkhead-vmm: $(OBJ)/vmm/main.o $(VMM_SECCOMP_OBJS) $(SAN_OBJ) $(VMM_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(STATIC) -o $@ $^ $(VMM_LIBS)

ALL_TARGETS += $(BIN)/bulkhead-vmm
