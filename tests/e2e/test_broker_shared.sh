#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# End to end (QEMU engine here): one shared broker (`bulkhead broker`) serving sessions that
# register over its control socket. Each session is known by the socket its guest's
# connections arrive on, gets only its own scope, and is revoked when it ends — however it
# ends. A dead broker ends its sessions with a clear message.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
if [ ! -x "$ECHO" ] || [ ! -x "$CLIENT" ] || ! command -v openssl > /dev/null; then
	skip "shared broker" "https-echo, proxy-client or openssl missing (make test builds them)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
SECRET='tok-shared-7d1a5b9f3c2e-secret'
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" \
	2> "$TMP/echo.err" &
pids="$pids $!"
i=0; while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$TMP/port")
printf '{"api": "%s"}\n' "$SECRET" > "$TMP/secrets.json"
chmod 600 "$TMP/secrets.json"
mkdir -p "$TMP/audit"
scope() { # FILE PATH-PREFIX: the token toward localhost:PORT under PATH-PREFIX only
	cat > "$1" << SCOPE
{ "secrets": [ { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "path_prefix": "$2", "allow_addresses": ["127.0.0.1"] } ] } ] }
SCOPE
}
scope "$TMP/a.json" /a/
scope "$TMP/b.json" /b/

start_broker() {
	: > "$TMP/broker.log"
	"$BULKHEAD" broker --secrets-file "$TMP/secrets.json" --ca-file "$TMP/ca.pem" \
		--audit-dir "$TMP/audit" 2> "$TMP/broker.log" &
	BPID=$!
	pids="$pids $BPID"
	wait_socket "$CTL" 5
}
CTL=$BULKHEAD_RUNDIR/broker.sock
mkdir -m 700 "$BULKHEAD_RUNDIR"
start_broker
if [ -S "$CTL" ] && [ "$(stat -c %a "$CTL")" = 600 ]; then
	ok "bulkhead broker listens on its control socket, mode 0600"
else
	not_ok "control socket" "$(cat "$TMP/broker.log")"; plan_done; exit 1
fi

# Two sessions at once, each with its own scope: A may use the token under /a/, B under /b/.
wget_to() { echo "wget -q -O - http://localhost:$PORT$1 > /dev/null && echo reached $1 || echo refused $1"; }
"$BULKHEAD" run --broker "$CTL" --scope "$TMP/a.json" -- sh -c "$(wget_to /a/1); $(wget_to /b/1)" \
	> "$TMP/a.out" 2> "$TMP/a.err" &
apid=$!
"$BULKHEAD" run --broker "$CTL" --scope "$TMP/b.json" -- sh -c "$(wget_to /b/2); $(wget_to /a/2)" \
	> "$TMP/b.out" 2> "$TMP/b.err"
brc=$?
wait $apid
arc=$?
check_eq "both sessions exit 0" "0 0" "$arc $brc"
if grep -qx "reached /a/1" "$TMP/a.out" && grep -qx "refused /b/1" "$TMP/a.out" &&
	grep -qx "reached /b/2" "$TMP/b.out" && grep -qx "refused /a/2" "$TMP/b.out"; then
	ok "each session gets exactly its own scope from the one broker"
else
	not_ok "per-session scope" "$(cat "$TMP/a.out" "$TMP/a.err")" "$(cat "$TMP/b.out" "$TMP/b.err")"
fi
check_eq "the upstream saw the token twice (once per session, in scope)" 2 \
	"$(grep -c "Authorization: Bearer $SECRET" "$TMP/upstream.log")"
if grep -qF "$SECRET" "$TMP/a.out" "$TMP/b.out" "$TMP/a.err" "$TMP/b.err"; then
	not_ok "the token never reaches either guest"
else
	ok "the token never reaches either guest"
fi
nreg=$(grep -c 'registered$' "$TMP/broker.log")
nend=$(grep -c 'ended: its sockets and state are gone' "$TMP/broker.log")
check_eq "two registrations, both revoked when their sessions ended" "2 2" "$nreg $nend"
nlogs=$(ls "$TMP/audit" | wc -l)
ver=0
for f in "$TMP"/audit/*.log; do "$BULKHEAD" audit verify "$f" > /dev/null 2>&1 || ver=1; done
check_eq "one audit log per session, each chain verifies" "2 0" "$nlogs $ver"

# A session killed with SIGKILL: its control connection closes and the broker revokes it.
"$BULKHEAD" run --broker "$CTL" --scope "$TMP/a.json" -- sleep 60 > /dev/null 2>&1 &
kpid=$!
i=0; while [ "$(grep -c 'registered$' "$TMP/broker.log")" -lt 3 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 $kpid
i=0; while [ "$(grep -c 'ended: its' "$TMP/broker.log")" -lt 3 ] && [ $i -lt 50 ]; do sleep 0.1; i=$((i + 1)); done
check_eq "kill -9 of a session's bulkhead revokes it in the broker" 3 \
	"$(grep -c 'ended: its' "$TMP/broker.log")"
wait $kpid 2> /dev/null

# Registrations the broker must refuse, each with its reason.
printf '{"v":1,"op":"register","session":"x"}\n' | "$CLIENT" raw "$CTL" > "$TMP/r1" 2>&1
grep -q '"ok":false' "$TMP/r1" && ok "a registration without a scope is refused: $(cat "$TMP/r1")" ||
	not_ok "registration without scope refused" "$(cat "$TMP/r1")"
printf '{"v":1,"op":"register","session":"x","scope":{}}\n' | "$CLIENT" raw "$CTL" > "$TMP/r2" 2>&1
grep -q 'listening socket' "$TMP/r2" && ok "a registration without the session's socket is refused" ||
	not_ok "registration without socket refused" "$(cat "$TMP/r2")"
# The control protocol (lib/control_proto.h): a request of our version naming a known op is
# served; one without a version, of another version, naming an unknown op or carrying a key
# its op does not take is refused with the reason, never served in part.
control() { # EXPECTED-PATTERN NAME REQUEST
	printf '%s\n' "$3" | "$CLIENT" raw "$CTL" > "$TMP/ctl" 2>&1
	if grep -q "$1" "$TMP/ctl"; then
		ok "control protocol: $2: $(cat "$TMP/ctl")"
	else
		not_ok "control protocol: $2" "$3" "$(cat "$TMP/ctl")"
	fi
}
control '^{"ok":true,"approvals":\[\]}$' "our version and a known op are served" \
	'{"v":1,"op":"approvals.list"}'
control '"ok":false.*needs \\"v\\":1' "a request without a version is refused" \
	'{"op":"approvals.list"}'
control '"ok":false.*version 2: this broker speaks version 1' \
	"a request of another version is refused" '{"v":2,"op":"approvals.list"}'
control '"ok":false.*needs \\"v\\":1' "a version that is not a number is refused" \
	'{"v":"1","op":"approvals.list"}'
control '"ok":false.*unknown op \\"approvals.purge\\"' "an unknown op is refused" \
	'{"v":1,"op":"approvals.purge"}'
control '"ok":false.*unknown op \\"unregister\\"' "an unknown op is refused" \
	'{"v":1,"op":"unregister","session":"x"}'
control '"ok":false.*takes no argument' "a key the op does not take is refused" \
	'{"v":1,"op":"approvals.list","all":true}'
control '"ok":false.*takes {id, approve, reason}' "a key the op does not take is refused" \
	'{"v":1,"op":"approvals.decide","id":"x","approve":true,"force":true}'
control '"ok":false.*registration must be' "a key the op does not take is refused" \
	'{"v":1,"op":"register","session":"x","scope":{},"extra":1}'
printf '{"secrets": [ {"name": 1} ] }' > "$TMP/bad.json"
"$BULKHEAD" run --broker "$CTL" --scope "$TMP/bad.json" -- true > /dev/null 2> "$TMP/bad.err"
rc=$?
if [ $rc = 125 ] && grep -q 'secrets\[0\]: "name" must be' "$TMP/bad.err"; then
	ok "a scope no broker could use fails the session before it starts: $(head -n 1 "$TMP/bad.err")"
else
	not_ok "bad scope refused" "rc=$rc" "$(cat "$TMP/bad.err")"
fi
# The broker checks a registration's scope itself, whoever sends it.
"$CLIENT" register "$CTL" badscope "$TMP/bad.json" "$TMP/bad-session.sock" < /dev/null > "$TMP/r3" 2>&1
if grep -q '"ok":false' "$TMP/r3" && grep -q 'must be' "$TMP/r3"; then
	ok "the broker refuses a registration whose scope it cannot use: $(cat "$TMP/r3")"
else
	not_ok "the broker refuses a bad scope" "$(cat "$TMP/r3")"
fi
if command -v setpriv > /dev/null; then
	out=$(printf '{}\n' | setpriv --reuid=65534 --regid=65534 --clear-groups "$CLIENT" raw "$CTL" 2>&1)
	if [ -z "$(echo "$out" | grep '"ok"')" ]; then
		ok "another user cannot talk to the control socket"
	else
		not_ok "another user refused" "$out"
	fi
else
	skip "another user cannot talk to the control socket" "setpriv (util-linux) missing"
fi

# The broker dies during a session: the session ends with a clear message.
"$BULKHEAD" run --broker "$CTL" --scope "$TMP/a.json" -- sleep 60 > /dev/null 2> "$TMP/dead.err" &
dpid=$!
i=0; while [ "$(grep -c 'registered$' "$TMP/broker.log")" -lt 4 ] && [ $i -lt 200 ]; do sleep 0.1; i=$((i + 1)); done
kill -9 $BPID
wait $dpid
rc=$?
if [ $rc = 125 ] && grep -q 'shared broker stopped during the session' "$TMP/dead.err"; then
	ok "a killed shared broker ends its sessions: $(grep -m1 'shared broker' "$TMP/dead.err")"
else
	not_ok "dead shared broker ends the session" "rc=$rc" "$(cat "$TMP/dead.err")"
fi
plan_done
