# guest/: bulkhead-init, linked statically so the initramfs needs no libc.
GUEST_INIT      := $(LIBDIR)/bulkhead-init
INIT_SRCS   := $(wildcard guest/init/*.c) lib/console_frame.c lib/agent_proto.c
INIT_CFLAGS    := -std=c11 -D_GNU_SOURCE $(WARN) -I. -Os -MMD -MP

$(OBJ)/init-static/%.o: %.c | deps
	@mkdir -p $(@D)
	$(CC) $(INIT_CFLAGS) -c -o $@ $<

$(GUEST_INIT): $(INIT_SRCS:%.c=$(OBJ)/init-static/%.o)
	@mkdir -p $(@D)
	$(CC) -static -s -o $@ $^ -lz

ALL_TARGETS += $(GUEST_INIT)
