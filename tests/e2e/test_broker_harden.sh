#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The broker's lock-down (broker/harden.c): once loaded it can start no process or program,
# seen from inside (its --harden-selftest hook forks, and dies by SIGSYS) and from outside (a
# live broker's seccomp filter, no_new_privs, no core dumps). The broker suites
# (test_broker_*.sh, test_approvals.sh) run it locked down, so what it must do still works.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
printf '{ "secrets": [], "allow": [] }\n' > "$TMP/rules.json"
"$BROKER" --listen "$TMP/b.sock" --rules "$TMP/rules.json" --harden-selftest > "$TMP/out" 2>&1
rc=$?
if [ $rc = 159 ] && grep -q '^selftest: locked down' "$TMP/out" && ! grep -q 'still alive' "$TMP/out"; then
	ok "a locked-down broker that tries to start a process dies by SIGSYS (exit 159)"
else
	not_ok "the broker's lock-down stops fork" "rc=$rc" "$(cat "$TMP/out")"
fi
rm -f "$TMP/b.sock"

"$BROKER" --listen "$TMP/b.sock" --rules "$TMP/rules.json" --quiet > /dev/null 2>&1 &
pid=$!
wait_socket "$TMP/b.sock" 5
st=/proc/$pid/status
if grep -q '^Seccomp:[[:space:]]*2' "$st" && grep -q '^NoNewPrivs:[[:space:]]*1' "$st" &&
	grep -q '^Max core file size *0 ' /proc/$pid/limits &&
	[ "$(grep -c '^Seccomp:[[:space:]]*2' /proc/$pid/task/*/status | grep -c ':0$')" = 0 ]; then
	ok "a live broker: seccomp filter on every thread, no_new_privs, no core dumps"
else
	not_ok "a live broker is locked down" "$(grep -E 'Seccomp|NoNew' "$st")"
fi
# Still serving: a request outside its (empty) scope gets the broker's own refusal.
printf 'GET http://example.invalid/ HTTP/1.1\r\nHost: example.invalid\r\n\r\n' > "$TMP/req"
answer=$("$BUILD/tests/proxy-client" raw "$TMP/b.sock" < "$TMP/req" 2> /dev/null | head -n 1 | tr -d "\r")
case $answer in
"HTTP/1.1 403"*) ok "and it still serves: $answer" ;;
*) not_ok "the locked-down broker still serves" "answer: $answer" ;;
esac
kill $pid; wait $pid 2> /dev/null
plan_done
