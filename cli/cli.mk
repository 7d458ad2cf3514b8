# cli/: the `bulkhead` command.
CLI_SRCS := $(wildcard cli/*.c)
CLI_BIN  := $(BIN)/bulkhead

$(CLI_BIN): $(CLI_SRCS:%.c=$(OBJ)/%.o) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lz

ALL_TARGETS += $(CLI_BIN)
