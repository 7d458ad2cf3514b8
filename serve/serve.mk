# SPDX-License-Identifier: Apache-2.0
# serve/: bulkhead-serve, the session API daemon (`bulkhead serve`, docs/API.md). It links the
# CLI's library for the pieces sessions share (run directories, the exec client, approvals);
# each session itself is a `bulkhead start` supervisor it runs as a child.
SERVE_SRCS := $(wildcard serve/*.c)
SERVE_BIN  := $(BIN)/bulkhead-serve

$(SERVE_BIN): $(SERVE_SRCS:%.c=$(OBJ)/%.o) $(SESSION_LIB) $(IMAGE_LIB) $(JAIL_LIB) $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lmicrohttpd -larchive -lz -lssl -lcrypto -ljansson -lhttp_parser -lseccomp -luring -lmount -lpthread

ALL_TARGETS += $(SERVE_BIN)
