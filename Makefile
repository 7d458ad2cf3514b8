# SPDX-License-Identifier: Apache-2.0
# bulkhead — top-level build. Non-recursive: each folder's *.mk adds its own targets.
# `make` builds everything; `make demo` runs a real session; `make test` runs all tests.
# Compiling first makes sure the packages ci/packages.txt tags `build` are installed
# (`make build-deps`); `make deps`, `demo` and `test` install the rest too.

# `make ARCH=arm64` on a host that is not arm64 cross-builds everything for arm64 into
# build-arm64 (README.md, "arm64"): Debian's gcc-aarch64-linux-gnu against an arm64 sysroot
# (glibc and the libraries we link, unpacked by tests/nested/fetch.sh --arch arm64, cached),
# and the guest kernel with the same compiler. On an arm64 host a plain `make` builds natively.
ARCH    ?= $(if $(filter aarch64,$(shell uname -m)),arm64,)
ifeq ($(ARCH),arm64)
ifneq ($(shell uname -m),aarch64)
BUILD   ?= build-arm64
ifeq ($(origin ARM64_PKGS),undefined)
ARM64_PKGS := $(shell sh tests/nested/fetch.sh --arch arm64)
endif
ifeq ($(ARM64_PKGS),)
$(error cannot fetch the arm64 sysroot (tests/nested/fetch.sh --arch arm64 said why))
endif
ARM64_SYSROOT := $(ARM64_PKGS)/arm64
CC      := aarch64-linux-gnu-gcc --sysroot=$(ARM64_SYSROOT)
ifneq ($(filter demo test check test-san test-tsan test-nested test-arm64 bench%,$(MAKECMDGOALS)),)
$(error an arm64 cross build does not run here: `make test-arm64` runs it in the nested arm64 host)
endif
endif
endif
BUILD   ?= build
BIN     := $(BUILD)/bin
OBJ     := $(BUILD)/obj
# Installed layout mirrors this: bin/ for programs, lib/bulkhead/ for guest artefacts.
LIBDIR  := $(BUILD)/lib/bulkhead

CC      ?= gcc
WARN    := -Wall -Wextra -Werror -Wshadow -Wmissing-prototypes -Wstrict-prototypes \
           -Wformat=2 -Wvla -Wpointer-arith -Wundef
CFLAGS  ?= -O2 -g
CFLAGS  += -std=c11 -D_GNU_SOURCE $(WARN) -I. -MMD -MP -fstack-protector-strong
LDFLAGS ?=
SAN     ?=
# Sanitizer builds (SAN=address,undefined; use a BUILD of their own, e.g. BUILD=build-san): every
# report ends the program (no recovery), and BULKHEAD_SANITIZED tells the code that programs
# usually linked statically are dynamic here (ASan has no static runtime): the jail then gives
# bulkhead-vmm and bulkhead-vsock their loader and libraries, and their allow-lists the
# sanitizer runtime's calls (jail/jail_san.c, lib/san.h). A normal build has none of that.
STATIC  := -static
SAN_OBJ :=
ifneq ($(SAN),)
SAN_OBJ := $(OBJ)/lib/san.o
CFLAGS  += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all \
           -DBULKHEAD_SANITIZED
LDFLAGS += -fsanitize=$(SAN)
STATIC  :=
endif

.PHONY: all deps build-deps demo test clean bench format
.DEFAULT_GOAL := all

# After build-deps: two apt-get runs at once (make -j) would fight over dpkg's lock.
deps: build-deps
	@sh ci/deps.sh

build-deps:
	@sh ci/deps.sh build

# Objects: build/obj/<path>.o from <path>.c, for host programs.
$(OBJ)/%.o: %.c | build-deps
	@mkdir -p $(@D)
	$(CC) $(CFLAGS) -c -o $@ $<

include lib/lib.mk
include kernel-config/kernel.mk
include guest/guest.mk
include initramfs/initramfs.mk
include vmm/vmm.mk
include vsock/vsock.mk
include tests/guests/guests.mk
include broker/broker.mk
include jail/jail.mk
include image/image.mk
include session/session.mk
include cli/cli.mk
include oci/oci.mk
include serve/serve.mk
include tests/tests.mk
include bench/bench.mk

all: $(ALL_TARGETS)

# A real session: the guest's output, then its exit code (3) as bulkhead's own.
demo: all | deps
	@echo '$$ bulkhead run -- sh -c '\''echo hello from $$(uname -n); uname -r; exit 3'\'''
	@$(BIN)/bulkhead run -- sh -c 'echo hello from $$(uname -n); uname -r; exit 3'; \
	  rc=$$?; echo "(exit code $$rc)"; [ $$rc -eq 3 ]

format:
	clang-format -i $$(git ls-files '*.c' '*.h')

clean:
	rm -rf $(BUILD)

-include $(shell find $(OBJ) -name '*.d' 2>/dev/null)
.SECONDARY:
