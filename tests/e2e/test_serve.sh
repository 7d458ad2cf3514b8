#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: `bulkhead serve`, the session API daemon (docs/API.md), against real guests
# under the QEMU engine here: the pool, exec streams, errors, concurrency, back-pressure,
# timeouts, events, who may connect, and a daemon killed with SIGKILL. The checks that
# speak HTTP are in tests/tools/serve_suite.py; each prints PASS or FAIL lines.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BIN/bulkhead-serve" ]; then
	skip "serve suite" "bulkhead-serve not built (run make)"; plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
SUITE="$(dirname "$0")/../tools/serve_suite.py"
SOCK="$TMP/serve.sock"
STATE="$TMP/state"

start_daemon() { # ARGS...: the daemon on $SOCK; waits for its socket
	"$BULKHEAD" serve --socket "$SOCK" --state "$STATE" "$@" 2>> "$TMP/serve.log" &
	daemon=$!
	pids="$pids $daemon"
	wait_socket "$SOCK" 10
}

pool_ready() { # N: waits (up to 120 s) until N pool guests are ready
	_i=0
	while [ $_i -lt 600 ]; do
		curl -s --unix-socket "$SOCK" http://serve/v1/pool | grep -q "\"ready\":$1" && return 0
		sleep 0.2; _i=$((_i + 1))
	done
	return 1
}

group() { # NAME [ARG]: one group of serve_suite.py's checks as TAP lines
	python3 "$SUITE" "$SOCK" "$@" > "$TMP/group" 2>&1
	grep -q '^PASS\|^FAIL' "$TMP/group" || echo "FAIL group $1 printed nothing: $(head -c 300 "$TMP/group")" >> "$TMP/group"
	while IFS= read -r line; do
		case $line in
		PASS\ *) ok "${line#PASS }" ;;
		FAIL\ *) not_ok "${line#FAIL }" ;;
		esac
	done < "$TMP/group"
	if ! kill -0 "$daemon" 2> /dev/null; then # how it ended, so that a failure can be read
		wait "$daemon"
		not_ok "the daemon lives through group $1" "it ended with status $?" "$(log_tail "$TMP/serve.log")"
	fi
}

start_daemon --pool 2
if pool_ready 2; then ok "the pool fills with 2 guests"; else not_ok "the pool fills with 2 guests" "$(tail -n 5 "$TMP/serve.log")"; fi
mode=$(stat -c %a "$SOCK")
check_eq "the socket is mode 0600" "600" "$mode"

group basic
mkdir -p "$TMP/host-work"
group files "$TMP/host-work"
mkfifo "$TMP/host-work/fifo"
group errors "$TMP/host-work" "$STATE"
rm -f "$TMP/host-work/fifo"
group cold
pool_ready 2 > /dev/null
group streams "$daemon"
group timeout
group events
group many

# Pool guests share nothing: each has its own work directory and run directory.
pool_ready 2 > /dev/null
a=$(curl -s --unix-socket "$SOCK" -X POST -d '{}' http://serve/v1/sessions)
b=$(curl -s --unix-socket "$SOCK" -X POST -d '{}' http://serve/v1/sessions)
wa=$(echo "$a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["work"])')
wb=$(echo "$b" | python3 -c 'import json,sys; print(json.load(sys.stdin)["work"])')
ia=$(echo "$a" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
ib=$(echo "$b" | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
curl -s --unix-socket "$SOCK" -X POST -d '{"cmd":["sh","-c","echo mine > /work/f; ls /work"]}' "http://serve/v1/sessions/$ia/exec" > /dev/null
seen=$(curl -s --unix-socket "$SOCK" -X POST -d '{"cmd":["ls","/work"]}' "http://serve/v1/sessions/$ib/exec")
if [ -n "$wa" ] && [ "$wa" != "$wb" ] && [ "$ia" != "$ib" ] && [ -f "$wa/f" ] && [ ! -e "$wb/f" ] &&
	echo "$seen" | grep -q '"exit"' && ! echo "$seen" | grep -q '"stdout"'; then
	ok "two pooled sessions share no work directory"
else
	not_ok "two pooled sessions share no work directory" "$wa $wb" "$seen"
fi

# Who may connect: another uid cannot reach a 0600 socket; with --allow-uid the peer check
# is the gate (403 for any other uid).
if command -v setpriv > /dev/null && [ "$(id -u)" = 0 ]; then
	out=$(setpriv --reuid 65534 --regid 65534 --clear-groups curl -s -o /dev/null -w '%{http_code}' --unix-socket "$SOCK" http://serve/v1/health 2>&1)
	check_eq "another uid cannot connect to the 0600 socket" "000" "$out"
	pub=$(mktemp -d /tmp/bulkhead-serve-XXXXXX); chmod 755 "$pub"
	"$BULKHEAD" serve --socket "$pub/s.sock" --state "$TMP/state2" --allow-uid 12345 2>> "$TMP/serve.log" &
	d2=$!; pids="$pids $d2"
	wait_socket "$pub/s.sock" 10
	out=$(setpriv --reuid 65534 --regid 65534 --clear-groups curl -s --unix-socket "$pub/s.sock" http://serve/v1/sessions)
	case $out in *'"error"'*'uid 65534'*) ok "a uid not allowed gets 403 naming it" ;; *) not_ok "a uid not allowed gets 403 naming it" "$out" ;; esac
	kill "$d2"; wait "$d2" 2> /dev/null
	"$BULKHEAD" serve --socket "$pub/s.sock" --state "$TMP/state2" --allow-uid 65534 2>> "$TMP/serve.log" &
	d2=$!; pids="$pids $d2"
	wait_socket "$pub/s.sock" 10
	as_nobody() { setpriv --reuid 65534 --regid 65534 --clear-groups curl -s --unix-socket "$pub/s.sock" "$@"; }
	mine=$(curl -s --unix-socket "$pub/s.sock" -X POST -d '{"pool":false}' http://serve/v1/sessions | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	out=$(as_nobody http://serve/v1/sessions)
	check_eq "a tenant (--allow-uid) is served, and sees no session of root's" '{"sessions":[]}' "$out"
	out=$(as_nobody "http://serve/v1/sessions/$mine")
	case $out in *'no such session'*) ok "a tenant cannot get root's session" ;; *) not_ok "a tenant cannot get root's session" "$out" ;; esac
	out=$(as_nobody -X POST -d '{"cmd":["true"]}' "http://serve/v1/sessions/$mine/exec")
	case $out in *'no such session'*) ok "a tenant cannot exec in root's session" ;; *) not_ok "a tenant cannot exec in root's session" "$out" ;; esac
	out=$(as_nobody -X DELETE "http://serve/v1/sessions/$mine")
	case $out in *'no such session'*) ok "a tenant cannot delete root's session" ;; *) not_ok "a tenant cannot delete root's session" "$out" ;; esac
	out=$(as_nobody -X POST -d '{"work":"/etc","work_ro":true}' http://serve/v1/sessions)
	case $out in *'uid 65534 names no host path'*) ok "a tenant cannot share a host directory (/etc read-only, readable to it)" ;; *) not_ok "a tenant cannot share a host directory (/etc read-only, readable to it)" "$out" ;; esac
	out=$(as_nobody -X POST -d '{"work":"/var/tmp"}' http://serve/v1/sessions)
	case $out in *'names no host path'*) ok "... nor one it may write (/var/tmp)" ;; *) not_ok "... nor one it may write (/var/tmp)" "$out" ;; esac
	out=$(as_nobody -X POST -d '{"scope":"/etc/shadow"}' http://serve/v1/sessions)
	case $out in *'names no host path'*) ok "a tenant cannot name a scope, vault or audit file" ;; *) not_ok "a tenant cannot name a scope, vault or audit file" "$out" ;; esac
	out=$(as_nobody http://serve/v1/approvals)
	case $out in *'approvals are for root'*) ok "approvals are not a tenant's" ;; *) not_ok "approvals are not a tenant's" "$out" ;; esac
	theirs=$(as_nobody -X POST -d '{"pool":false}' http://serve/v1/sessions | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
	out=$(as_nobody -X POST -d '{"cmd":["echo","tenant"]}' "http://serve/v1/sessions/$theirs/exec")
	case $out in *'"stdout":"dGVuYW50Cg=="'*) ok "a tenant runs commands in its own session" ;; *) not_ok "a tenant runs commands in its own session" "$theirs $out" ;; esac
	python3 "$(dirname "$0")/../tools/serve_conns.py" "$pub/s.sock" 65534 64 > "$TMP/conns" 2>&1
	grep -q '^last: HTTP/1.1 503 .*uid 65534 has 64 connections open' "$TMP/conns" &&
		ok "a tenant past 64 half-open connections is answered 503 saying so" ||
		not_ok "a tenant past 64 half-open connections is answered 503 saying so" "$(cat "$TMP/conns")"
	grep -q '^root served while held: True' "$TMP/conns" &&
		ok "... and root is served meanwhile" || not_ok "... and root is served meanwhile" "$(cat "$TMP/conns")"
	grep -q '^uid served after: True' "$TMP/conns" &&
		ok "... and the tenant is served again once they close" ||
		not_ok "... and the tenant is served again once they close" "$(cat "$TMP/conns")"
	python3 "$(dirname "$0")/../tools/serve_conns.py" "$pub/s.sock" uids 3000 70 65534 > "$TMP/uids" 2>&1
	grep -q '^last: HTTP/1.1 503 .*may not use this daemon hold all' "$TMP/uids" &&
		ok "70 uids that may not use the daemon hold at most 16 connections in all" ||
		not_ok "70 uids that may not use the daemon hold at most 16 connections in all" "$(cat "$TMP/uids")"
	grep -q '^root served while held: True' "$TMP/uids" && grep -q '^tenant served while held: True' "$TMP/uids" &&
		ok "... and root and the tenant are served meanwhile" ||
		not_ok "... and root and the tenant are served meanwhile" "$(cat "$TMP/uids")"
	ev=$(as_nobody -m 2 "http://serve/v1/events?since=0")
	if echo "$ev" | grep -q "$theirs" && ! echo "$ev" | grep -q "$mine"; then ok "a tenant's event stream holds its own sessions only"; else not_ok "a tenant's event stream holds its own sessions only" "$ev"; fi
	kill "$d2"; wait "$d2" 2> /dev/null
	rm -rf "$pub"
else
	skip "who may connect" "needs root and setpriv to act as another uid"
fi

# A daemon killed with SIGKILL: its sessions end with it (their lifeline), and its next start
# leaves nothing: no supervisor, guest, run directory, cgroup or work directory.
cs=$(curl -s --unix-socket "$SOCK" -X POST -d '{"pool":false}' http://serve/v1/sessions | python3 -c 'import json,sys; print(json.load(sys.stdin)["id"])')
[ -d "$BULKHEAD_RUNDIR/$cs" ] && ok "a session runs before the kill" || not_ok "a session runs before the kill" "$cs"
kill -KILL "$daemon"; wait "$daemon" 2> /dev/null
_i=0
while [ -n "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null | grep -v '\.lock$')" ] && [ $_i -lt 300 ]; do sleep 0.1; _i=$((_i + 1)); done
left=$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null | grep -v '\.lock$' | tr '\n' ' ')
check_eq "after SIGKILL every session ended by itself (no run directory left)" "" "$left"
procs=$(pgrep -f "$BULKHEAD_RUNDIR" | tr '\n' ' ')
check_eq "no supervisor or guest process is left" "" "$procs"
rm -f "$SOCK"
start_daemon
_i=0; while [ -n "$(ls -A "$STATE/sessions")" ] && [ $_i -lt 100 ]; do sleep 0.1; _i=$((_i + 1)); done
check_eq "the next start removed the records" "" "$(ls -A "$STATE/sessions" | tr '\n' ' ')"
check_eq "... and every work directory it had made" "" "$(ls -A "$STATE/work" | tr '\n' ' ')"
cg=$([ -n "$cs" ] && find /sys/fs/cgroup -maxdepth 5 -type d -name "bulkhead-$cs" 2> /dev/null | head -n 1)
check_eq "... and no cgroup of the killed daemon's session" "" "$cg"

# TERM: every session stopped, the socket removed.
curl -s --unix-socket "$SOCK" -X POST -d '{}' http://serve/v1/sessions > /dev/null
kill -TERM "$daemon"; wait "$daemon"
rc=$?
check_eq "TERM: the daemon exits 0" "0" "$rc"
left=$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null | grep -v '\.lock$' | tr '\n' ' ')
check_eq "TERM: no session is left" "" "$left"
[ ! -e "$SOCK" ] && ok "TERM: the socket is removed" || not_ok "TERM: the socket is removed"
no_sanitizer_report "$BIN/bulkhead-serve" "$TMP/serve.log"
plan_done
