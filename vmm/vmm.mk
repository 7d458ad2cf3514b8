# vmm/: bulkhead-vmm, the KVM microVM monitor. Everything but main.c goes into $(VMM_LIB) so
# unit tests (tests/unit/test_vmm_*.c) can call the VMM's pieces directly.
VMM_SRCS := $(filter-out vmm/main.c,$(wildcard vmm/*.c vmm/x86/*.c vmm/virtio/*.c))
VMM_LIB  := $(OBJ)/libvmm.a

$(VMM_LIB): $(VMM_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(BIN)/bulkhead-vmm: $(OBJ)/vmm/main.o $(VMM_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^

ALL_TARGETS += $(BIN)/bulkhead-vmm
