#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The tree keeps its shape (tests/tools/tree_shape.py): no include circle among modules, one
# suffix for private headers, cli/ only for the bulkhead command, and one reader of the
# monotonic clock (lib/mono.h), one whole-file reader (lib/io.h), libmicrohttpd only in serve/'s HTTP front. Each rule is also shown
# to catch what it forbids, on a small tree made here.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
shape=tests/tools/tree_shape.py

if out=$(python3 "$shape" . 2>&1); then
	ok "the tree has no include circle, one private-header suffix, cli/ for commands only, one clock reader, one whole-file reader, libmicrohttpd only in serve's HTTP front"
else
	not_ok "the tree's shape" "$out"
fi

# The suites wait for a helper's socket one way, lib.sh's wait_socket. (The arm64 host's /init
# runs under busybox alone, where lib.sh is not: it has its own, for virtiofsd's socket.)
loops=$(grep -ln 'while \[ ! -S' tests/e2e/*.sh tests/nested/*.sh 2> /dev/null |
	grep -v -e '^tests/e2e/lib.sh$' -e '^tests/nested/arm64_l1_init.sh$')
check_eq "every suite waits for a socket with wait_socket (lib.sh), none with a loop of its own" "" "$loops"

# A tree of its own for each rule: a file that breaks it, and the line that must name it.
mk() { mkdir -p "$(dirname "$TMP/$1/$2")" && printf '%s\n' "$3" > "$TMP/$1/$2"; }
mk circle vmm/log.c '#include "vmm/stopwait.h"'
mk circle vmm/stopwait.h '#include "vmm/vm.h"'
mk circle vmm/vm.c '#include "vmm/log.h"'
mk circle vmm/log.h ''
mk circle vmm/vm.h ''
mk circle tests/a.c '#include "vmm/vm.h"'
mk private jail/jail_int.h ''
mk private jail/jail.c '#include "jail/jail_int.h"'
mk cliuse serve/http.c '#include "cli/rundir.h"'
mk cliuse cli/rundir.h ''
mk clock broker/t.c 'static long f(void) { struct timespec t; clock_gettime(CLOCK_MONOTONIC, &t); return t.tv_sec; }'
mk internal broker/scrub.h ''
mk mhd serve/exec.c '#include <microhttpd.h>'
mk fread cli/x.c 'static size_t f(FILE *f, char *b) { return fread(b, 1, 64, f); }'
mk mhd serve/routes.c '#include <microhttpd.h>'
mk internal broker/scrub_internal.h '#include "broker/scrub.h"'
mk internal broker/scrub.c '#include "broker/scrub_internal.h"'
expect() { # NAME TREE PATTERN
	out=$(python3 "$shape" "$TMP/$2" 2>&1)
	rc=$?
	if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -q "$3"; then
		ok "$1"
	else
		not_ok "$1" "exit $rc" "$out"
	fi
}
expect "a circle of three modules is named" circle "include circle among: vmm/log, vmm/stopwait, vmm/vm"
expect "a private header with another suffix is named" private "jail/jail_int.h: a private header"
expect "serve/ including a cli/ header is named" cliuse "serve/http.c: includes cli/rundir.h"
expect "a second reader of the monotonic clock is named" clock "broker/t.c: reads CLOCK_MONOTONIC itself"
expect "libmicrohttpd seen below serve/'s HTTP front is named" mhd "serve/exec.c: includes microhttpd.h"
expect "a whole-file reader of its own is named" fread "cli/x.c: reads a file with fread"
if python3 "$shape" "$TMP/mhd" 2>&1 | grep -q "serve/routes.c"; then
	not_ok "the HTTP front itself may include libmicrohttpd"
else
	ok "the HTTP front itself may include libmicrohttpd"
fi
if out=$(python3 "$shape" "$TMP/internal" 2>&1); then
	ok "a private header that includes its module's public one is no circle"
else
	not_ok "a module's private header counted as a circle" "$out"
fi
plan_done
