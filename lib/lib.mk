# SPDX-License-Identifier: Apache-2.0
# lib/: small pieces shared by host programs (and, where noted, the guest).
LIB_SRCS := $(wildcard lib/*.c)
LIB_A    := $(OBJ)/libbulkhead.a

$(LIB_A): $(LIB_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
