# SPDX-License-Identifier: Apache-2.0
# oci/: bulkhead-oci, the OCI runtime (runc's command line) whose containers are sessions. It
# links the CLI's library: a container is a session planned and run as `bulkhead run` does.
OCI_SRCS := $(wildcard oci/*.c)
OCI_BIN  := $(BIN)/bulkhead-oci

$(OCI_BIN): $(OCI_SRCS:%.c=$(OBJ)/%.o) $(SESSION_LIB) $(IMAGE_LIB) $(JAIL_LIB) $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz -lssl -lcrypto -ljansson -lhttp_parser -lseccomp -luring -lmount

ALL_TARGETS += $(OCI_BIN)
