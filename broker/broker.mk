# SPDX-License-Identifier: Apache-2.0
# broker/: bulkhead-broker, the credential broker (issues 6 and 7). Its pieces build into one
# library that the CLI (vault, audit), the broker daemon and the unit tests link.
# Programs' main()s (and the broker's command line) stay out of the library.
BROKER_SRCS := $(filter-out broker/main.c broker/%_main.c broker/broker_cmdline.c,$(wildcard broker/*.c))
BROKER_LIB  := $(OBJ)/libbroker.a

$(BROKER_LIB): $(BROKER_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^

# bulkhead-broker: the proxy daemon (broker_main.c; proxy, rules, dest, scrub, upstream TLS).
$(BIN)/bulkhead-broker: $(OBJ)/broker/broker_main.o $(OBJ)/broker/broker_cmdline.o $(BROKER_LIB) $(LIB_A)
	@mkdir -p $(@D)
	$(CC) $(LDFLAGS) -o $@ $^ -lhttp_parser -lwslay -lnghttp2 -lssl -lcrypto -ljansson -lexpat -lseccomp -luring -lpthread -lz

ALL_TARGETS += $(BIN)/bulkhead-broker
