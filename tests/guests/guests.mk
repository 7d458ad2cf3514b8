# SPDX-License-Identifier: Apache-2.0
# tests/guests/: freestanding test and probe guests for bulkhead-vmm --test-guest, built as
# flat binaries into $(LIBDIR)/guests/NAME.bin. A guest is NAME.c (linked with start.S) or
# NAME.S (self-contained). ABI: lib/test_guest_abi.h. Helpers (GUEST_HELPERS, not guests
# themselves) are linked into the guests that name them in GUEST_USES_<name>.
GUEST_HELPERS := tests/guests/start.S tests/guests/vsock_drv.c
GUEST_USES_vsock := vsock_drv
GUEST_NAMES := $(sort $(basename $(notdir $(filter-out $(GUEST_HELPERS),\
                 $(wildcard tests/guests/*.c tests/guests/*.S)))))
GUEST_OBJ   := $(BUILD)/guests
GUEST_BINS  := $(GUEST_NAMES:%=$(LIBDIR)/guests/%.bin)

# No libc, no PIC, no red zone (nothing guarantees one), no SSE (the entry state does not
# promise it, and ring 0 is emulated on some hosts), no CET endbr64 (an old emulator may not
# know it), no stack protector (no TLS to read the canary from).
GUEST_CFLAGS := -std=c11 $(WARN) -I. -MMD -MP -O2 -m64 -ffreestanding -fno-pic -fno-pie \
                -mno-red-zone -mgeneral-regs-only -mcmodel=small -fno-stack-protector \
                -fcf-protection=none -fno-asynchronous-unwind-tables -fno-builtin
# The image is one RWX blob by design (no loader to honour permissions).
GUEST_LDFLAGS := -nostdlib -static -no-pie -Wl,--build-id=none -Wl,-T,tests/guests/guest.ld \
                 -Wl,-z,noexecstack -Wl,--no-warn-rwx-segments

$(GUEST_OBJ)/%.o: tests/guests/%.c | deps
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -c -o $@ $<

$(GUEST_OBJ)/%.o: tests/guests/%.S | deps
	@mkdir -p $(@D)
	$(CC) $(GUEST_CFLAGS) -c -o $@ $<

# C guests get start.o first (its .text.start holds _start); assembly guests stand alone.
guest_objs = $(if $(wildcard tests/guests/$(1).c),$(GUEST_OBJ)/start.o) $(GUEST_OBJ)/$(1).o \
             $(GUEST_USES_$(1):%=$(GUEST_OBJ)/%.o)

.SECONDEXPANSION:
$(GUEST_OBJ)/%.elf: $$(call guest_objs,$$*) tests/guests/guest.ld
	$(CC) $(GUEST_CFLAGS) $(GUEST_LDFLAGS) -o $@ $(filter %.o,$^)

$(LIBDIR)/guests/%.bin: $(GUEST_OBJ)/%.elf
	@mkdir -p $(@D)
	objcopy -O binary $< $@

# Keep objects and ELF files (for objdump, and so a second make does nothing).
.PRECIOUS: $(GUEST_OBJ)/%.o $(GUEST_OBJ)/%.elf

# x86-64 guests: an arm64 build has none (tests/guests/arm64/ is assembled by its suite).
ifeq ($(VMM_ARCH),x86)
ALL_TARGETS += $(GUEST_BINS)
endif
-include $(wildcard $(GUEST_OBJ)/*.d)
