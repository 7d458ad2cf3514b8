#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end (QEMU engine here): `bulkhead serve --pool` serves creates that carry a scope, a
# vault and a broker from guests booted before any of that was known. Each pool guest boots
# with its own session CA and a broker that allows nothing; a create binds it to its scope
# and broker (private, or a shared one) at once. Checked: the token injected and never in the
# guest (output, environment, files, RAM); requests before the binding refused and audited;
# the policy's refusals in a cold start's words, the guest discarded; two sessions on one
# shared broker; a broker that is missing or dies; 10 creates at once; a guest bound at most
# once; a create racing the daemon's end. The checks that speak HTTP are in
# tests/tools/serve_pool_scope.py.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
if [ ! -x "$BIN/bulkhead-serve" ] || [ ! -x "$ECHO" ] || ! command -v openssl > /dev/null; then
	skip "pooled sessions with scopes" "bulkhead-serve, https-echo or openssl missing (make test builds them)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run" XDG_STATE_HOME="$TMP/xdg"
export RUNDIR="$BULKHEAD_RUNDIR" AUDIT_DIR="$TMP/xdg/bulkhead/audit" TMP
SUITE="$(dirname "$0")/../tools/serve_pool_scope.py"
SOCK="$TMP/serve.sock"
pids=

if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" \
	2> "$TMP/echo.err" &
pids="$pids $!"
trap 'kill $pids 2>/dev/null; wait 2>/dev/null; rm -rf "$TMP"' EXIT
i=0; while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
export PORT="$(cat "$TMP/port")" VAULT="$TMP/vault" CA="$TMP/ca.pem"

# Ten secrets, api0..api9, each its own value.
"$BULKHEAD" vault init --vault "$VAULT" > /dev/null 2>&1
n=0
while [ $n -lt 10 ]; do
	v="tok-$n-$(od -An -N8 -tx1 /dev/urandom | tr -d ' \n')-pooled"
	export "SECRET_$n=$v"
	printf '%s' "$v" | "$BULKHEAD" vault put "api$n" --vault "$VAULT" > /dev/null 2>&1
	n=$((n + 1))
done
cat > "$TMP/policy.json" << 'POLICY'
{ "deny_hosts": ["*.corp.example"] }
POLICY

# The shared broker, with the same vault and upstream CA.
export SHARED="$TMP/shared.sock"
mkdir -m 700 "$TMP/shared-audit"
"$BULKHEAD" broker --control "$SHARED" --vault "$VAULT" --ca-file "$CA" --audit-dir "$TMP/shared-audit" \
	> /dev/null 2> "$TMP/shared.log" &
pids="$pids $!"
wait_socket "$SHARED" 10

start_daemon() { # READY POOL...: the daemon on $SOCK; waits until READY guests are up
	_want=$1; shift
	_args=; for _p in "$@"; do _args="$_args --pool $_p"; done
	# shellcheck disable=SC2086 # one word per --pool
	"$BULKHEAD" serve --socket "$SOCK" --state "$TMP/state" --policy "$TMP/policy.json" \
		$_args 2>> "$TMP/serve.log" &
	daemon=$!
	pids="$pids $daemon"
	wait_socket "$SOCK" 10
	pool_ready "$_want" || not_ok "the pool fills with $_want guests" "$(tail -n 5 "$TMP/serve.log")"
}

pool_ready() { # N: waits (up to 180 s) until N pool guests are ready
	_i=0
	while [ $_i -lt 900 ]; do
		curl -s --unix-socket "$SOCK" http://serve/v1/pool | grep -q "\"ready\":$1," && return 0
		sleep 0.2; _i=$((_i + 1))
	done
	return 1
}

group() { # NAME [READY]: one group of serve_pool_scope.py's checks as TAP lines, once READY
	# pool guests are up (the groups before took some)
	[ -z "${2:-}" ] || pool_ready "$2" || not_ok "the pool refills to $2 before group $1"
	python3 "$SUITE" "$SOCK" "$1" > "$TMP/group" 2>&1
	grep -q '^PASS\|^FAIL' "$TMP/group" || echo "FAIL group $1 printed nothing: $(head -c 300 "$TMP/group")" >> "$TMP/group"
	while IFS= read -r line; do
		case $line in
		PASS\ *) ok "${line#PASS }" ;;
		FAIL\ *) not_ok "${line#FAIL }" ;;
		esac
	done < "$TMP/group"
	kill -0 "$daemon" 2> /dev/null || not_ok "the daemon lives through group $1" "$(log_tail "$TMP/serve.log")"
}

start_daemon 3 3
group prebind 3
group inject 3
group refused 3
group shared 3
group deadbroker 3
group bindonce 3
group race 3
kill -TERM "$daemon"; wait "$daemon" 2> /dev/null

start_daemon 11 10 1:mem=320:cpus=2
group many
group shapes

# A create racing the daemon's end: answered or refused, and nothing of it left behind.
curl -s --unix-socket "$SOCK" -X POST -d "{\"scope\":{\"allow\":[]},\"broker\":\"$SHARED\"}" \
	-o "$TMP/race.out" -w '%{http_code}' http://serve/v1/sessions > "$TMP/race.code" 2>&1 &
cpid=$!
sleep 0.01
kill -TERM "$daemon"
wait "$cpid"; wait "$daemon" 2> /dev/null
left=$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null; pgrep -f "bulkhead-broker .*$TMP/run" ; pgrep -f "qemu-system.*$TMP" )
code=$(cat "$TMP/race.code")
# 201: bound before the end; 422 or 503 with the reason; 000: the connection was cut.
case $code in
201 | 000) raced=ok ;;
422 | 503) grep -q '"error":"..' "$TMP/race.out" && raced=ok ;;
esac
if [ "${raced:-}" = ok ]; then
	ok "a create racing the daemon's end is answered ($code: $(head -c 100 "$TMP/race.out")) or cut"
else
	not_ok "a create racing the daemon's end is answered or cut" "$code $(cat "$TMP/race.out")"
fi
check_eq "nothing of any session outlives the daemon" "" "$left"
sleep 0.5
if grep -q "registered" "$TMP/shared.log" && [ "$(grep -c ' registered' "$TMP/shared.log")" = \
	"$(grep -c ' ended: ' "$TMP/shared.log")" ]; then
	ok "every session the shared broker took was revoked with its guest"
else
	not_ok "every session the shared broker took was revoked with its guest" "$(tail -n 8 "$TMP/shared.log")"
fi
plan_done
