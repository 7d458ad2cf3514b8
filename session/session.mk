# SPDX-License-Identifier: Apache-2.0
# session/: the session engine as a library — a request resolved into a plan, the plan run
# (engines, shares, broker and vsock back ends, run directory, exec client, watch). The
# `bulkhead` command (cli/), `bulkhead serve` (serve/) and `bulkhead-oci` (oci/) link it.
SESSION_SRCS := $(wildcard session/*.c)
SESSION_LIB  := $(OBJ)/libsession.a

$(SESSION_LIB): $(SESSION_SRCS:%.c=$(OBJ)/%.o)
	@mkdir -p $(@D)
	rm -f $@
	$(AR) rcs $@ $^
