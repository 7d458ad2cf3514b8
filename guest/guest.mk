# SPDX-License-Identifier: Apache-2.0
# guest/: bulkhead-init, linked statically so the initramfs needs no libc.
GUEST_INIT      := $(LIBDIR)/bulkhead-init
INIT_SRCS   := $(wildcard guest/init/*.c) lib/console_frame.c lib/agent_proto.c lib/io.c
INIT_CFLAGS    := -std=c11 -D_GNU_SOURCE $(WARN) -I. -Os -MMD -MP
# A sanitizer build checks PID 1 for undefined behaviour too, statically: in trap mode UBSan
# needs no runtime (a violation is an illegal instruction: init dies, the kernel panics and
# the session fails loudly). ASan has no static runtime, and none inside the guest.
ifneq ($(findstring undefined,$(SAN)),)
INIT_CFLAGS    += -fsanitize=undefined -fsanitize-undefined-trap-on-error
endif

$(OBJ)/init-static/%.o: %.c | build-deps
	@mkdir -p $(@D)
	$(CC) $(INIT_CFLAGS) -c -o $@ $<

$(GUEST_INIT): $(INIT_SRCS:%.c=$(OBJ)/init-static/%.o)
	@mkdir -p $(@D)
	$(CC) -static -s -o $@ $^ -lz

ALL_TARGETS += $(GUEST_INIT)
