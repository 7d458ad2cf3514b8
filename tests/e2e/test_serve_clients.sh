#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: the clients of `bulkhead serve` and its OpenAPI description, against a real
# daemon with real guests (QEMU TCG here) and a warm pool of one. The Python client
# (clients/python/tests/e2e.py) and the TypeScript one (clients/ts/test/e2e.ts, built with
# typescript from npm when it can be) each create pooled and cold sessions, run commands with
# exact bytes, stream, stdin, exit codes and signals, move files and archives, delete, and get
# errors with their status; tests/tools/openapi_check.py checks docs/openapi.json against
# docs/API.md and against every answer of the daemon, errors included.
. "$(dirname "$0")/lib.sh"
require "serve clients" python3

# relay FILE: a driver's lines ("ok - NAME", "not ok - NAME", "# detail") as this suite's TAP.
relay() {
	while IFS= read -r _l; do
		case $_l in
		"ok - "*) ok "${_l#ok - }" ;;
		"not ok - "*) not_ok "${_l#not ok - }" ;;
		"#"*) printf '%s\n' "$_l" ;;
		*) printf '# %s\n' "$_l" ;;
		esac
	done < "$1"
}

# driver NAME RC FILE: relays FILE; a driver that failed without saying so is a failure too.
driver() {
	relay "$3"
	if [ "$2" != 0 ] && ! grep -q '^not ok - ' "$3"; then
		not_ok "$1 ran to its end" "exit status $2" "$(tail -n 15 "$3")"
	fi
}

python3 tests/tools/openapi_check.py --static docs/openapi.json docs/API.md > "$TMP/static" 2>&1
driver "openapi_check.py --static" $? "$TMP/static"

if command -v mypy > /dev/null; then
	if mypy --strict --no-incremental clients/python/bulkhead > "$TMP/mypy" 2>&1; then
		ok "the Python client passes mypy --strict"
	else
		not_ok "the Python client passes mypy --strict" "$(tail -n 20 "$TMP/mypy")"
	fi
else
	skip "the Python client passes mypy --strict" "mypy is not installed (apt-get install mypy)"
fi

# The TypeScript client is built before any guest runs (build.sh: 77 = cannot here, and why).
sh clients/ts/build.sh > "$TMP/ts-build" 2>&1
ts_rc=$?
case $ts_rc in
0) ok "the TypeScript client builds (tsc, strict)" ;;
77) skip "the TypeScript client" "$(tail -n 1 "$TMP/ts-build")" ;;
*) not_ok "the TypeScript client builds (tsc, strict)" "$(tail -n 30 "$TMP/ts-build")" ;;
esac

if ! "$BULKHEAD" serve --help > /dev/null 2>&1; then
	skip "serve clients against a daemon" "this bulkhead has no serve command"
	plan_done
	exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
sock=$TMP/serve.sock
"$BULKHEAD" serve --socket "$sock" --pool 1 --state "$TMP/state" > "$TMP/serve.log" 2>&1 &
serve_pid=$!
pids="$pids $serve_pid"
health() {
	python3 -c 'import sys; sys.path.insert(0, "clients/python"); from bulkhead import Bulkhead
sys.exit(0 if Bulkhead(sys.argv[1], timeout=10).health().ok else 1)' "$sock" 2> /dev/null
}
i=0
while ! health && [ $i -lt 600 ] && kill -0 "$serve_pid" 2> /dev/null; do
	sleep 0.1
	i=$((i + 1))
done
if ! health; then
	not_ok "bulkhead serve answers /v1/health" "$(log_tail "$TMP/serve.log")"
	plan_done
	exit 0
fi
ok "bulkhead serve answers /v1/health"

# Approvals: a shared broker in the daemon's run directory (found there as `bulkhead approvals`
# finds it) holds each POST of a registered session until someone decides through the API.
approvals=
no_approvals=
for t in https-echo proxy-client; do
	[ -x "$BUILD/tests/$t" ] || no_approvals="$BUILD/tests/$t not built (make test-programs builds it)"
done
command -v openssl > /dev/null || no_approvals="openssl is missing"
if [ -z "$no_approvals" ] && test_pki; then
	"$BUILD/tests/https-echo" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/up.log" > "$TMP/port" 2> /dev/null &
	pids="$pids $!"
	PORT=$(wait_port "$TMP/port")
	printf '{"TOK": "serve-clients-secret-5d2e"}\n' > "$TMP/secrets.json"
	chmod 600 "$TMP/secrets.json"
	printf '{ "require_approval": [ { "host": "localhost", "methods": ["POST"] } ], "approval_ttl_seconds": 300 }\n' \
		> "$TMP/policy.json"
	cat > "$TMP/scope.json" << EOF
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT, "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF
	"$BULKHEAD" broker --policy "$TMP/policy.json" --secrets-file "$TMP/secrets.json" --ca-file "$TMP/ca.pem" \
		--audit-dir "$TMP" 2> "$TMP/broker.log" &
	pids="$pids $!"
	wait_socket "$BULKHEAD_RUNDIR/broker.sock" 5
	mkfifo "$TMP/hold"
	"$BUILD/tests/proxy-client" register "$BULKHEAD_RUNDIR/broker.sock" s1 "$TMP/scope.json" "$TMP/s1.sock" \
		< "$TMP/hold" > "$TMP/s1.reg" 2>&1 &
	sleep 900 > "$TMP/hold" &
	pids="$pids $!"
	i=0; while [ ! -s "$TMP/s1.reg" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	grep -q '"ok":true' "$TMP/s1.reg" && approvals=1
	no_approvals="no shared broker: $(cat "$TMP/broker.log" "$TMP/s1.reg" 2> /dev/null | tail -n 3 | tr '\n' ' ')"
fi
# held NAME: POST /w/NAME through session s1 of the shared broker, in the background ($held).
held() {
	printf 'POST http://localhost:%s/w/%s HTTP/1.1\r\nContent-Length: 2\r\nConnection: close\r\n\r\n{}' \
		"$PORT" "$1" | "$BUILD/tests/proxy-client" raw "$TMP/s1.sock" > "$TMP/$1.out" &
	held=$!
}
if [ -n "$approvals" ]; then
	ok "a shared broker holds a registered session's POSTs for approval"
elif [ -x "$BUILD/tests/proxy-client" ] && command -v openssl > /dev/null; then
	not_ok "a shared broker holds a registered session's POSTs for approval" "$no_approvals"
else
	skip "approvals through the API" "$no_approvals"
fi
# up AFTER: the daemon still answers (a client's way of leaving must never take it down). Once
# it does not, what is left to ask of it is skipped (gone: why).
gone=
up() {
	if health; then
		ok "the daemon still answers after $1"
	else
		not_ok "the daemon still answers after $1" "$(log_tail "$TMP/serve.log")"
		gone="the daemon is gone (after $1)"
	fi
}
# decided NAME STATUS-LINE FILE: the held request ended with that status once decided (with no
# daemon left to decide, it is not waited for: its broker would hold it for the whole TTL).
decided() {
	if [ -n "$gone" ]; then
		kill "$held" 2> /dev/null
		skip "$1" "$gone"
		return
	fi
	wait "$held"
	check_eq "$1: the held request's answer" "$2" "$(head -n 1 "$TMP/$3.out" | tr -d '\r')"
}

timeout 900 python3 clients/python/tests/e2e.py "$sock" "$TMP" > "$TMP/py" 2>&1
driver "the Python client suite" $? "$TMP/py"
up "the Python client suite"
if [ -n "$approvals" ] && [ -z "$gone" ]; then
	held by-python
	timeout 120 python3 clients/python/tests/e2e.py "$sock" "$TMP" approve /w/by-python > "$TMP/py-appr" 2>&1
	driver "the Python client's approval" $? "$TMP/py-appr"
	decided "approved through the Python client" "HTTP/1.1 200 OK" by-python
fi

if [ -n "$gone" ]; then
	skip "openapi_check.py against the daemon" "$gone"
else
	[ -n "$approvals" ] && held by-openapi-check
	timeout 600 python3 tests/tools/openapi_check.py docs/openapi.json "$sock" ${approvals:+--approval} \
		> "$TMP/openapi" 2>&1
	driver "openapi_check.py" $? "$TMP/openapi"
	up "openapi_check.py"
	[ -n "$approvals" ] && decided "approved by openapi_check.py" "HTTP/1.1 200 OK" by-openapi-check
fi

if [ $ts_rc = 0 ] && [ -n "$gone" ]; then
	skip "the TypeScript client suite" "$gone"
elif [ $ts_rc = 0 ]; then
	timeout 900 node clients/ts/dist/test/e2e.js "$sock" "$TMP" > "$TMP/ts" 2>&1
	driver "the TypeScript client suite" $? "$TMP/ts"
	up "the TypeScript client suite"
	if [ -n "$approvals" ] && [ -z "$gone" ]; then
		held by-ts
		timeout 120 node clients/ts/dist/test/e2e.js "$sock" "$TMP" deny /w/by-ts > "$TMP/ts-appr" 2>&1
		driver "the TypeScript client's denial" $? "$TMP/ts-appr"
		decided "denied through the TypeScript client" "HTTP/1.1 403 Forbidden" by-ts
	fi
fi
[ -n "$gone" ] && { plan_done; exit 0; }

# Every session the suites made is gone.
left=$(python3 -c 'import sys; sys.path.insert(0, "clients/python"); from bulkhead import Bulkhead
print(" ".join(s.id for s in Bulkhead(sys.argv[1], timeout=10).sessions()))' "$sock" 2>&1)
check_eq "every session the clients made was deleted" "" "$left"

# A stop: the daemon is our child, so it is waited for (a watchdog KILLs it after 30 s).
kill -TERM "$serve_pid" 2> /dev/null || not_ok "the daemon was still there to stop" "$(log_tail "$TMP/serve.log")"
(sleep 30; kill -KILL "$serve_pid" 2> /dev/null) &
dog=$!
wait "$serve_pid"
serve_rc=$?
kill "$dog" 2> /dev/null
if [ $serve_rc = 137 ]; then
	not_ok "the daemon stops on SIGTERM" "still running after 30 s" "$(log_tail "$TMP/serve.log")"
else
	ok "the daemon stops on SIGTERM"
	check_eq "no session's run directory is left after it" "" \
		"$(find "$BULKHEAD_RUNDIR" -mindepth 1 -maxdepth 1 -type d 2> /dev/null)"
fi
no_sanitizer_report "$BIN/bulkhead-serve" "$TMP/serve.log"
plan_done
