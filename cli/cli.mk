# cli/: the `bulkhead` command.
CLI_SRCS := $(wildcard cli/*.c)
CLI_BIN  := $(BIN)/bulkhead

$(CLI_BIN): $(CLI_SRCS:%.c=$(OBJ)/%.o) $(JAIL_LIB) $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz -lcrypto -ljansson -lhttp_parser -lseccomp

ALL_TARGETS += $(CLI_BIN)
