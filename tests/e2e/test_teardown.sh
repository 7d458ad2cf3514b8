#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# When `bulkhead run` (or `bulkhead stop`) returns, nothing of the session is left: no
# process of it runs or waits to be reaped (virtiofsd's sandboxed child included), its uid
# lease is free, its cgroups are gone, its share can be removed. A caller may reuse all of
# that at once. tests/tools/reap-check runs bulkhead as the reaper of whatever it leaves.
. "$(dirname "$0")/lib.sh"
REAP=$BUILD/tests/reap-check

if [ ! -x "$REAP" ]; then
	not_ok "reap-check built" "$REAP missing"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
mkdir -p "$TMP/w"

# reaped NAME EXPECTED-STATUS BULKHEAD-ARGS...: nothing left the moment bulkhead returns.
reaped() {
	name=$1 want=$2
	shift 2
	timeout -s KILL 120 "$REAP" "$BULKHEAD" "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
	if [ "$rc" = "$want" ] && ! grep -q '^left:' "$TMP/out"; then
		ok "$name: nothing left when bulkhead returns"
	else
		not_ok "$name: nothing left when bulkhead returns" "status $rc (want $want)" \
			"$(grep '^left:' "$TMP/out")" "$(tail -n 2 "$TMP/err")"
	fi
}

reaped "run --work" 0 run --work "$TMP/w" -- true
reaped "run --work :ro" 3 run --work "$TMP/w:ro" -- sh -c 'exit 3'
reaped "run --work, the command killed by a signal" 137 run --work "$TMP/w" -- sh -c 'kill -9 $$'
reaped "run --work, --timeout" 124 run --timeout 2 --work "$TMP/w" -- sleep 30
printf '{ "allow": [] }\n' > "$TMP/scope.json"
reaped "run --work --scope (a private broker)" 0 run --scope "$TMP/scope.json" --work "$TMP/w" -- true
reaped "run without a share" 0 run -- true

# The share: removable at once, and what the guest wrote is all there.
"$BULKHEAD" run --work "$TMP/w" -- sh -c 'echo data > /work/f' < /dev/null
if rm -r "$TMP/w" 2> "$TMP/rm.err" && mkdir "$TMP/w"; then
	ok "the share can be removed the moment bulkhead returns"
else
	not_ok "the share can be removed the moment bulkhead returns" "$(cat "$TMP/rm.err")"
	mkdir -p "$TMP/w"
fi

# The uid lease and the cgroups, with a uid we choose (as root only: the jail leases ids).
if [ "$(id -u)" -ne 0 ]; then
	skip "the session's uid and cgroups are free when bulkhead returns" "needs root"
	plan_done; exit 0
fi
uid=$((2063597568 + 4242 + $$ % 1000))
procs_of() { ps -e -o uid= -o pid= -o stat= -o comm= | awk -v u="$1" '$1 == u'; }
"$BULKHEAD" run --jail-uid "$uid" --work "$TMP/w" -- true < /dev/null > /dev/null 2>&1
check_eq "no process of the session's uid when run returns" "" "$(procs_of "$uid")"
if [ ! -e "/run/bulkhead-jail-uids/$uid" ]; then
	ok "the session's uid lease is free when run returns, its file removed"
else
	not_ok "the session's uid lease is free when run returns, its file removed" \
		"$(ls -l "/run/bulkhead-jail-uids/$uid")"
fi
"$BULKHEAD" run --jail-uid "$uid" --work "$TMP/w" -- true < /dev/null > /dev/null 2> "$TMP/err"
check_eq "... and the next session may take the same uid at once" 0 "$?"

id=$("$BULKHEAD" start --jail-uid "$uid" --work "$TMP/w" 2> "$TMP/err")
if [ -n "$id" ]; then
	"$BULKHEAD" exec "$id" -- true
	timeout -s KILL 60 "$BULKHEAD" stop "$id"
	check_eq "bulkhead stop returns once the session is gone" 0 "$?"
	check_eq "... no process of its uid left" "" "$(procs_of "$uid")"
	check_eq "... no cgroup of it left" "" \
		"$(find /sys/fs/cgroup -maxdepth 5 -type d -name "bulkhead-$id" 2> /dev/null)"
	flock -n "/run/bulkhead-jail-uids/$uid" true 2> /dev/null && ok "... its uid lease is free" ||
		not_ok "... its uid lease is free"
else
	not_ok "bulkhead start for the teardown checks" "$(cat "$TMP/err")"
fi
check_eq "no run directory left" "" "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
plan_done
