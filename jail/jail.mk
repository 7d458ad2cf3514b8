# SPDX-License-Identifier: Apache-2.0
# jail/: starting and confining a session's processes (the jail step, its ids, cgroups, process
# plumbing), one library that the CLI, its test tools and benchmarks link.
JAIL_SRCS := $(wildcard jail/*.c)
JAIL_LIB  := $(OBJ)/libjail.a

$(JAIL_LIB): $(JAIL_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
