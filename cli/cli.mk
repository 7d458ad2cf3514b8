# SPDX-License-Identifier: Apache-2.0
# cli/: the `bulkhead` command — its subcommands, over the session engine (session/). Its
# pieces build into one library (everything but main.c) that the command and the unit tests
# link.
CLI_SRCS := $(filter-out cli/main.c,$(wildcard cli/*.c))
CLI_LIB  := $(OBJ)/libcli.a
CLI_BIN  := $(BIN)/bulkhead

$(CLI_LIB): $(CLI_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

$(CLI_BIN): $(OBJ)/cli/main.o $(CLI_LIB) $(SESSION_LIB) $(IMAGE_LIB) $(JAIL_LIB) $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz -lssl -lcrypto -ljansson -lhttp_parser -lseccomp -luring -lmount

ALL_TARGETS += $(CLI_BIN)
