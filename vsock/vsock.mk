# SPDX-License-Identifier: Apache-2.0
# vsock/: bulkhead-vsock, the vhost-user virtio-vsock back end. Everything but main.c goes into
# $(VSOCK_LIB) so unit tests (tests/unit/test_vsock*.c) drive the queues and the state machine.
VSOCK_SRCS := $(filter-out vsock/main.c vsock/seccomp.c,$(wildcard vsock/*.c))
VSOCK_LIB  := $(OBJ)/libvsock.a

$(VSOCK_LIB): $(VSOCK_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# Static: it runs in an empty root (jail/jail.c), with no loader or libraries to find.
# (Dynamic in a sanitizer build: see SAN in the Makefile.)
$(BIN)/bulkhead-vsock: $(OBJ)/vsock/main.o $(OBJ)/vsock/seccomp.o $(SAN_OBJ) $(VSOCK_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) $(STATIC) -o $@ $^ -lseccomp

ALL_TARGETS += $(BIN)/bulkhead-vsock

# Its guest-side test tools and test initramfs.
include tests/guest-tools/guest-tools.mk

# Throughput through the back end next to a host socketpair (bench/vsock-throughput.sh).
.PHONY: bench-vsock
VSOCK_BENCH_RUNS ?= 5
bench-vsock: $(BIN)/bulkhead-vsock guest-tools
	@BUILD=$(BUILD) RUNS=$(VSOCK_BENCH_RUNS) sh bench/vsock-throughput.sh
