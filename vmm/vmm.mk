# SPDX-License-Identifier: Apache-2.0
# vmm/: bulkhead-vmm, the KVM microVM monitor. Everything but main.c and the allow-lists goes
# into $(VMM_LIB) so unit tests (tests/unit/test_vmm_*.c) can call the VMM's pieces directly.
VMM_SRCS := $(filter-out vmm/main.c vmm/seccomp.c,$(wildcard vmm/*.c vmm/x86/*.c vmm/virtio/*.c))
VMM_LIB  := $(OBJ)/libvmm.a

$(VMM_LIB): $(VMM_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# vmm/arm64/: the arm64 machine's plain-data pieces (its device tree with libfdt, the Image
# header and boot layout). Built on every host: unit-tested here (tests/unit/test_vmm_arm64.c)
# before an arm64 bulkhead-vmm links them.
VMM_ARM64_SRCS := $(wildcard vmm/arm64/*.c)
VMM_ARM64_LIB  := $(OBJ)/libvmm_arm64.a

$(VMM_ARM64_LIB): $(VMM_ARM64_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# Static: it can run in an empty root (descriptors for every file, see vmm/README.md), with
# no loader or libraries to find. (Dynamic in a sanitizer build: see SAN in the Makefile.)
$(BIN)/bulkhead-vmm: $(OBJ)/vmm/main.o $(OBJ)/vmm/seccomp.o $(SAN_OBJ) $(VMM_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(STATIC) -o $@ $^ -lseccomp -lz

ALL_TARGETS += $(BIN)/bulkhead-vmm
