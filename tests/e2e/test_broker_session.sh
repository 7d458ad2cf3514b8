#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end (QEMU engine here): a guest command reaches an HTTPS API through the
# session's broker — the guest's proxy shim (127.0.0.1:3128) -> vsock -> bulkhead-broker
# -> verified TLS — with a token from the vault injected on the way, and the token
# appears nowhere the guest can see: not in what it receives, its environment or files.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
if [ ! -x "$ECHO" ] || [ ! -x "$BIN/bulkhead-broker" ] || ! command -v openssl > /dev/null; then
	skip "broker in a session" "https-echo, bulkhead-broker or openssl missing (make test builds them)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
SECRET='tok-9f3c2e7d1a5b-SESSION-secret'

# A test CA and a certificate for localhost, made here.
if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" \
	2> "$TMP/echo.err" &
EPID=$!
trap 'kill $EPID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0; while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$TMP/port")

"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
printf '%s' "$SECRET" | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
cat > "$TMP/scope.json" << SCOPE
{
  "secrets": [
    { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/v1/", "allow_addresses": ["127.0.0.1", "::1"] } ] }
  ],
  "allow": []
}
SCOPE

run_capture run --scope "$TMP/scope.json" --vault "$TMP/vault" --ca-file "$TMP/ca.pem" \
	--audit "$TMP/audit.log" -- sh -c "wget -q -O - http://localhost:$PORT/v1/items; echo; echo wget=\$?;
	       env; cat /proc/self/environ; grep -rl '$SECRET' / --exclude-dir=proc --exclude-dir=sys 2>/dev/null; true"
check_eq "the session's command exits 0" 0 "$rc"
grep -q "GET /v1/items" "$TMP/out" && ok "the guest's request reaches the HTTPS upstream through the broker" ||
	not_ok "the guest's request reaches the HTTPS upstream through the broker" "$(head -c 600 "$TMP/out")" "$(cat "$TMP/err")"
grep -q "Authorization: Bearer $SECRET" "$TMP/upstream.log" &&
	ok "the upstream sees the vault's token, injected by the broker" ||
	not_ok "the upstream sees the vault's token, injected by the broker" "$(tail -n 5 "$TMP/upstream.log")"
if grep -qF "$SECRET" "$TMP/out" "$TMP/err"; then
	not_ok "the token appears nowhere in the guest's output, environment or files (even echoed back)"
else
	ok "the token appears nowhere in the guest's output, environment or files (even echoed back)"
fi

# Nor in the processes that hold the guest: the VM process's and bulkhead-vsock's arguments,
# environment and descriptors, seen from outside while a session with the vault runs.
mkdir -m 700 "$TMP/rd"
BULKHEAD_RUNDIR="$TMP/rd" "$BULKHEAD" run --scope "$TMP/scope.json" --vault "$TMP/vault" \
	--ca-file "$TMP/ca.pem" --audit "$TMP/audit.log" -- sleep 3 > /dev/null 2>&1 &
spid=$!
vm=$(BULKHEAD_RUNDIR="$TMP/rd" vm_pid)
vs=$(pgrep -f "bulkhead-vsock .*--uds-path $TMP/rd")
leak=
for p in $vm $vs; do
	grep -qF "$SECRET" /proc/$p/cmdline /proc/$p/environ && leak="$leak $p:args/env"
	for f in /proc/$p/fd/*; do
		case $(readlink "$f") in "$TMP"/vault* | *audit*) leak="$leak $p:$(readlink "$f")" ;; esac
	done
done
if [ -n "$vm" ] && [ -n "$vs" ] && [ -z "$leak" ]; then
	ok "the VM process and bulkhead-vsock hold no token in arguments or environment, no vault or audit descriptor"
else
	not_ok "no secret reaches the VM process or bulkhead-vsock" "vm='$vm' vsock='$vs' leak='$leak'"
fi
wait $spid

# Another path on the same host is not in scope: refused by the broker.
run_capture run --scope "$TMP/scope.json" --vault "$TMP/vault" --ca-file "$TMP/ca.pem" \
	--audit "$TMP/audit.log" -- wget -q -O - "http://localhost:$PORT/admin"
if [ "$rc" != 0 ] && ! grep -q "Authorization" "$TMP/out"; then
	ok "a request outside the scope is refused"
else
	not_ok "a request outside the scope is refused" "rc=$rc" "$(head -c 300 "$TMP/out")"
fi

# Both sessions' requests are in the audit log: chained, with the secret's name and the
# decision, and never its value.
"$BULKHEAD" audit verify "$TMP/audit.log" > "$TMP/verify" 2>&1
check_eq "the audit log's chain verifies" 0 "$?"
grep '"path":"/v1/items"' "$TMP/audit.log" | grep -q '"secrets":\["api"\].*"decision":"allow"' &&
	ok "the audit log records the injected request with the secret's name" ||
	not_ok "the audit log records the injected request with the secret's name" "$(cat "$TMP/audit.log")"
grep '"path":"/admin"' "$TMP/audit.log" | grep -q '"decision":"deny".*"status":403' &&
	ok "the audit log records the refused request" ||
	not_ok "the audit log records the refused request" "$(cat "$TMP/audit.log")"
if grep -qF "$SECRET" "$TMP/audit.log"; then
	not_ok "the audit log never holds the secret's value"
else
	ok "the audit log never holds the secret's value"
fi

# An OAuth 2 entry: the broker obtains the access token (python3-oauthlib as token endpoint and
# API, tests/tools/oauth_provider.py); the guest sees none of the tokens or the client's secret
# in what it receives, its environment, its files or its RAM.
if debian_python oauthlib; then
	"$PY" "$(dirname "$0")/../tools/oauth_provider.py" "$TMP/up.pem" "$TMP/up.key" \
		"$TMP/oauth.log" 60 agent client-S3cret-9902 rt-session-4410-kk > "$TMP/oauth.port" \
		2> "$TMP/oauth.err" &
	OPID=$!
	OPORT=$(wait_port "$TMP/oauth.port")
	printf '{"token_url": "https://localhost:%s/token", "client_id": "agent", "client_secret": "client-S3cret-9902", "refresh_token": "rt-session-4410-kk", "allow_addresses": ["127.0.0.1"]}' \
		"$OPORT" | "$BULKHEAD" vault put oauth --kind oauth2-refresh --vault "$TMP/vault" > /dev/null 2>&1
	sed -e "s/\"name\": \"api\"/\"name\": \"oauth\"/" -e "s/\"port\": $PORT/\"port\": $OPORT/" \
		-e 's|"/v1/"|"/api"|' "$TMP/scope.json" > "$TMP/oscope.json"
	run_capture run --engine qemu --ram-file "$TMP/oauth.ram" --scope "$TMP/oscope.json" \
		--vault "$TMP/vault" --ca-file "$TMP/ca.pem" -- sh -c "
		wget -q -O - http://localhost:$OPORT/api/one; echo; wget -q -O - http://localhost:$OPORT/api/two
		echo; env; cat /proc/self/environ; true"
	kill $OPID 2> /dev/null
	[ "$(grep -c '"your_token": "\[bulkhead:redacted\]"' "$TMP/out")" = 2 ] &&
		ok "a guest calls an OAuth API twice with the token the broker obtained (its echo scrubbed)" ||
		not_ok "a guest calls an OAuth API with the obtained token" "$(head -c 600 "$TMP/out")" "$(cat "$TMP/err")"
	leak=
	for v in $(sed -n 's/^issued //p' "$TMP/oauth.log") client-S3cret-9902 rt-session-4410-kk; do
		grep -qaF "$v" "$TMP/out" "$TMP/err" "$TMP/oauth.ram" && leak="$leak ${v%%-*}"
	done
	if [ -s "$TMP/oauth.ram" ] && grep -qaF "/api/two" "$TMP/oauth.ram" && [ -z "$leak" ] &&
		grep -q '^issued at-' "$TMP/oauth.log"; then
		ok "no access token, refresh token or client secret in the guest's output, environment, files or RAM"
	else
		not_ok "no OAuth token in the guest" "leak:$leak ram:$(stat -c %s "$TMP/oauth.ram" 2> /dev/null)"
	fi
else
	skip "an OAuth 2 entry in a session" "python3-oauthlib is not installed (make deps)"
fi

# An aws-sigv4 entry: the guest sends what an SDK with placeholder keys sends; the broker signs
# with the real key, which a server checks with botocore's signer (tests/tools/aws_server.py);
# the server's echo of the key is scrubbed, and the key is nowhere in the guest, its RAM included.
if debian_python boto3; then
	ASECRET='wJalrXUtnSESSION/K7MDENG+bPxRfi9902'
	printf '{"AKIASESSIONKEY77TEST": ["%s", null]}' "$ASECRET" > "$TMP/keys.json"
	"$PY" "$(dirname "$0")/../tools/aws_server.py" "$TMP/up.pem" "$TMP/up.key" "$TMP/aws.log" \
		"$TMP/keys.json" > "$TMP/aws.port" 2> "$TMP/aws.err" &
	APID=$!
	APORT=$(wait_port "$TMP/aws.port")
	printf '{"access_key_id": "AKIASESSIONKEY77TEST", "secret_access_key": "%s"}' "$ASECRET" |
		"$BULKHEAD" vault put s3 --kind aws-sigv4 --vault "$TMP/vault" > /dev/null 2>&1
	cat > "$TMP/ascope.json" << ASCOPE
{ "secrets": [ { "name": "s3", "inject": { "aws_sigv4": { "service": "s3", "region": "us-east-1" } },
    "s3": [ "agent-data/runs/" ],
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $APORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
ASCOPE
	run_capture run --engine qemu --ram-file "$TMP/aws.ram" --scope "$TMP/ascope.json" \
		--vault "$TMP/vault" --ca-file "$TMP/ca.pem" -e AWS_ACCESS_KEY_ID=AKIAPLACEHOLDER00000 \
		-e AWS_SECRET_ACCESS_KEY=placeholder -- sh -c "
		wget -q -O - --header 'X-Amz-Content-SHA256: UNSIGNED-PAYLOAD' --header \
		'Authorization: AWS4-HMAC-SHA256 Credential=AKIAPLACEHOLDER00000/20260101/us-east-1/s3/aws4_request, SignedHeaders=host, Signature=00' \
		http://localhost:$APORT/agent-data/runs/tattle; echo; env; true"
	kill $APID 2> /dev/null
	grep -q 'keys: \[bulkhead:redacted\]' "$TMP/out" &&
		grep -q '^ok GET /agent-data/runs/tattle s3 us-east-1$' "$TMP/aws.log" &&
		ok "a guest's S3 request is signed by the broker with the real key (its echo scrubbed)" ||
		not_ok "a guest's S3 request is signed by the broker" "$(head -c 600 "$TMP/out")" "$(cat "$TMP/aws.log" "$TMP/err")"
	if [ -s "$TMP/aws.ram" ] && grep -qaF "agent-data/runs/tattle" "$TMP/aws.ram" &&
		grep -q AKIAPLACEHOLDER00000 "$TMP/out" && ! grep -qaF "$ASECRET" "$TMP/out" "$TMP/err" "$TMP/aws.ram"; then
		ok "the guest holds only placeholder keys: no secret key in its output, environment or RAM"
	else
		not_ok "no AWS secret key in the guest" "ram:$(stat -c %s "$TMP/aws.ram" 2> /dev/null)"
	fi
else
	skip "an aws-sigv4 entry in a session" "python3-boto3 is not installed (make deps)"
fi

# No scope: the guest reaches nothing at all.
run_capture run -- wget -q -T 5 -O - "http://localhost:$PORT/v1/items"
if [ "$rc" != 0 ] && [ ! -s "$TMP/out" ]; then
	ok "without --scope the guest has no way out"
else
	not_ok "without --scope the guest has no way out" "rc=$rc" "$(head -c 300 "$TMP/out")"
fi
# An approval round trip in a real session: the global policy holds the guest's POST until a
# person approves it on the host; meanwhile the guest can reach only its vsock ports.
cat > "$TMP/policy.json" << POLICY
{ "require_approval": [ { "host": "localhost", "methods": ["POST"] } ] }
POLICY
"$BULKHEAD" run --policy "$TMP/policy.json" --scope "$TMP/scope.json" --vault "$TMP/vault" \
	--ca-file "$TMP/ca.pem" --audit "$TMP/audit2.log" -- \
	curl -sS -d held=1 "http://localhost:$PORT/v1/items" > "$TMP/held.out" 2>&1 &
rpid=$!
i=0; while ! "$BULKHEAD" approvals list --json 2> /dev/null | grep -q '"id"' && [ $i -lt 200 ]; do
	sleep 0.1; i=$((i + 1)); done
ID=$("$BULKHEAD" approvals list --json | sed -n 's/.*"id": "\([0-9a-f]*\)".*/\1/p')
socks=$(cd "$BULKHEAD_RUNDIR"/* 2> /dev/null && find . -type s | sort | tr '\n' ' ')
held_early=$(wc -c < "$TMP/held.out")
"$BULKHEAD" approvals approve "$ID" > /dev/null 2>&1
wait $rpid
rc=$?
if [ -n "$ID" ] && [ "$held_early" = 0 ] && [ $rc = 0 ] && grep -q '^POST /v1/items' "$TMP/held.out" &&
	grep -q "\"approval\":\"$ID\"" "$TMP/audit2.log"; then
	ok "a guest POST waits for 'bulkhead approvals approve', then gets the API's answer"
else
	not_ok "approval round trip in a session" "id=$ID rc=$rc early=$held_early" "$(cat "$TMP/held.out")"
fi
# The vsock back end connects guest port P only to <run dir>/vsock/vsock.sock_P, and its root
# holds only that directory; the private broker's control socket (broker.ctl) is outside it,
# and the shared one lives elsewhere.
check_eq "the session's sockets: the guest reaches only vsock/vsock.sock_<port>, not broker.ctl" \
	"./broker.ctl ./vsock-vhost.sock ./vsock/vsock.sock ./vsock/vsock.sock_1025 ./vsock/vsock.sock_1026 " \
	"$socks"
check_eq "no run directory, socket or broker is left" "" "$(ls -A "$BULKHEAD_RUNDIR")"
plan_done
