#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_redteam_req.sh: the request target is judged and forwarded in one
# canonical spelling. A real broker with a global policy that holds writes under /w/ and git
# pushes to main for approval (TTL 1 s, nobody approves), in front of https-echo, which logs
# every request it receives. Each other spelling of a held path that servers route the same
# (%77 for 'w', git-receive%2Dpack: a CGI decodes PATH_INFO) is held like the path itself, or
# refused ('//', ';'); the upstream receives the canonical target; method overrides are
# refused; Range does not reach a destination with a credential; a push with more ref
# updates than the broker reads is held, never passed unchecked.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
require "canonical request targets" "$BROKER" "$ECHO" "$CLIENT" openssl
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
D=$TMP
"$ECHO" --cert "$D/up.pem" --key "$D/up.key" --log "$D/up.log" > "$D/up.port" 2> /dev/null &
pids="$pids $!"
UP=$(wait_port "$D/up.port")
"$ECHO" --log "$D/open.log" > "$D/open.port" 2> /dev/null &
pids="$pids $!"
OPEN=$(wait_port "$D/open.port")
cat > "$D/policy.json" << EOF2
{ "require_approval": [
    { "host": "localhost", "methods": ["POST", "DELETE"], "path_prefix": "/w/" },
    { "host": "localhost", "git_ref": "refs/heads/main" } ],
  "approval_ttl_seconds": 1 }
EOF2
cat > "$D/scope.json" << EOF2
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $UP,
                        "allow_addresses": ["127.0.0.1"] } ] } ],
  "allow": [ { "scheme": "http", "host": "127.0.0.1", "port": $OPEN,
               "allow_addresses": ["127.0.0.1"] } ] }
EOF2
printf '{"TOK": "canon-test-secret-5512"}\n' > "$D/secrets.json"
chmod 600 "$D/secrets.json"
SOCK=$D/b.sock
"$BROKER" --listen "$SOCK" --rules "$D/scope.json" --secrets-file "$D/secrets.json" \
	--policy "$D/policy.json" --ca-file "$D/ca.pem" --audit "$D/audit.log" --session s1 \
	2> "$D/broker.log" &
pids="$pids $!"
wait_socket "$SOCK" 5
if [ -z "$UP" ] || [ -z "$OPEN" ] || [ ! -S "$SOCK" ]; then
	not_ok "upstreams and broker start" "$(cat "$D/broker.log")"
	plan_done
	exit 1
fi

# req NAME METHOD TARGET [BODY-FILE] [EXTRA-HEADER]: one request to the TLS upstream.
req() {
	body=${4:-/dev/null}
	{
		printf '%s http://localhost:%s%s HTTP/1.1\r\nContent-Length: %s\r\n%sConnection: close\r\n\r\n' \
			"$2" "$UP" "$3" "$(wc -c < "$body")" "${5:-}"
		cat "$body"
	} | "$CLIENT" raw "$SOCK" > "$D/$1.out"
}
status() { head -n 1 "$D/$1.out" | tr -d '\r'; }
# held NAME: the request was held for approval (and, nobody approving, expired), and nothing of
# it reached the upstream.
held() {
	if [ "$(status "$1")" = "HTTP/1.1 403 Forbidden" ] && grep -q 'approval .* expired' "$D/$1.out" &&
		[ ! -s "$D/up.log" ]; then
		ok "$2: held for approval, nothing upstream"
	else
		not_ok "$2: held for approval" "$(cat "$D/$1.out")" "upstream got: $(cat "$D/up.log")"
	fi
	: > "$D/up.log"
}
refused() {
	if [ "$(status "$1")" = "HTTP/1.1 400 Bad Request" ] && grep -q "$3" "$D/$1.out" &&
		[ ! -s "$D/up.log" ]; then
		ok "$2: 400 ($3), nothing upstream"
	else
		not_ok "$2: refused with 400" "$(cat "$D/$1.out")" "upstream got: $(cat "$D/up.log")"
	fi
	: > "$D/up.log"
}
# upstream_got NAME LINE: the request was answered, and the upstream's request line was LINE.
upstream_got() {
	got=$(sed -n 1p "$D/up.log")
	if [ "$(status "$1")" = "HTTP/1.1 200 OK" ] && [ "$got" = "$2" ]; then
		ok "$1: the upstream received '$2'"
	else
		not_ok "$1: upstream receives '$2'" "$(cat "$D/$1.out")" "upstream got: $(cat "$D/up.log")"
	fi
	: > "$D/up.log"
}
printf '{"name":"x"}' > "$D/json"

req plain POST /w/items "$D/json"
held plain "POST /w/items (the rule's own spelling)"
req pct_w POST /%77/items "$D/json"
held pct_w "POST /%77/items (an escaped unreserved letter)"
req pct_lower POST /%77%2fitems "$D/json"
refused pct_lower "POST /%77%2fitems" "encoded slash"
req dslash POST //w/items "$D/json"
refused dslash "POST //w/items" "empty segment"
req param POST "/w;x/items" "$D/json"
refused param "POST /w;x/items" "path parameter"
req dots POST /x/%2e%2e/w/items "$D/json"
refused dots "POST /x/%2e%2e/w/items" "dot segment"
if grep -q 'POST https*://localhost:[0-9]*/w/items held for approval' "$D/broker.log"; then
	ok "the held request is shown to the person as the canonical /w/items"
else
	not_ok "held request shown canonical" "$(cat "$D/broker.log")"
fi

# A git push to main: its service path spelled with an escape is still a push.
Z=0000000000000000000000000000000000000000
O=1111111111111111111111111111111111111111
pkt() { printf '%04x%s' $((${#1} + 4)) "$1"; }
{
	cmd="$Z $O refs/heads/main"
	printf '%04x%s\0report-status' $((${#cmd} + 4 + 14)) "$cmd"
	printf '0000PACK'
} > "$D/push_main"
req push POST /repo.git/git-receive-pack "$D/push_main" 'Content-Type: application/x-git-receive-pack-request\r\n'
held push "git push to main at /repo.git/git-receive-pack"
req push_pct POST /repo.git/git-receive%2Dpack "$D/push_main" 'Content-Type: application/x-git-receive-pack-request\r\n'
held push_pct "git push to main at /repo.git/git-receive%2Dpack"
req push_pct2 POST /repo.git/git%2Dreceive%2dpack "$D/push_main" 'Content-Type: application/x-git-receive-pack-request\r\n'
held push_pct2 "git push to main at /repo.git/git%2Dreceive%2dpack"
# The matcher reads at most 64 ref updates: a push with more is held whatever its refs.
{
	cmd="$Z $O refs/heads/dev0"
	printf '%04x%s\0report-status' $((${#cmd} + 4 + 14)) "$cmd"
	k=1
	while [ $k -le 70 ]; do pkt "$Z $O refs/heads/dev$k"; k=$((k + 1)); done
	printf '0000PACK'
} > "$D/push_many"
req push_many POST /repo.git/git-receive-pack "$D/push_many"
held push_many "a push of 71 refs, none of them main"
{
	cmd="$Z $O refs/heads/dev"
	printf '%04x%s\0report-status' $((${#cmd} + 4 + 14)) "$cmd"
	printf '0000PACK'
} > "$D/push_dev"
req push_dev POST /repo.git/git-receive%2Dpack "$D/push_dev"
upstream_got push_dev "POST /repo.git/git-receive-pack"

# What reaches the upstream is the canonical target, the query decoded the same way.
req refs GET "/repo.git/info/refs?service=git-receive%2Dpack"
upstream_got refs "GET /repo.git/info/refs?service=git-receive-pack"
req canon GET "/%61pi/%7euser/a%2bb?q=%2fx%2D%41&z=1"
upstream_got canon "GET /api/~user/a%2Bb?q=%2Fx-A&z=1"

# A method the decision never saw: refused, whatever the header's spelling.
for h in X-HTTP-Method-Override X-HTTP-Method X-Method-Override X-Method X-Original-Method; do
	req override GET /w/items /dev/null "$h: DELETE\r\n"
	refused override "GET /w/items with $h: DELETE" "method override"
done
for q in "_method=DELETE" "a=1&_METHOD=delete" "%5Fmethod=DELETE" "x=1;_method"; do
	req override_q POST "/x?$q" "$D/json"
	refused override_q "POST /x?$q (a framework reads the method from the query)" "method override"
done
req not_override GET "/x?my_method=DELETE&_methods=1"
upstream_got not_override "GET /x?my_method=DELETE&_methods=1"

# Paths in another case: some upstreams route without regard to case, so a rule that holds
# writes holds them in any case (a grant stays exact).
req upper_w POST /W/items "$D/json"
held upper_w "POST /W/items (the rule's path in upper case)"
req upper_pct POST /%57/items "$D/json"
held upper_pct "POST /%57/items (an escaped upper-case letter)"
req push_upper POST /repo.git/GIT-RECEIVE-PACK "$D/push_main" 'Content-Type: application/x-git-receive-pack-request\r\n'
held push_upper "git push to main at /repo.git/GIT-RECEIVE-PACK"

# Range: never toward a destination with a credential (a part of an answer hides the rest
# from the scrubber); toward one without, it passes.
req range GET /x /dev/null 'Range: bytes=0-3\r\nIf-Range: "e1"\r\n'
if [ "$(status range)" = "HTTP/1.1 200 OK" ] && grep -q '^Authorization: Bearer' "$D/up.log" &&
	! grep -qi '^range:\|^if-range:' "$D/up.log"; then
	ok "Range and If-Range are dropped toward a destination with a credential"
else
	not_ok "Range dropped with a credential" "$(cat "$D/up.log")"
fi
: > "$D/up.log"
printf 'GET http://127.0.0.1:%s/x HTTP/1.1\r\nRange: bytes=0-3\r\nConnection: close\r\n\r\n' "$OPEN" |
	"$CLIENT" raw "$SOCK" > "$D/open.out"
if grep -q '^Range: bytes=0-3' "$D/open.log"; then
	ok "Range passes toward a destination without a credential"
else
	not_ok "Range passes without a credential" "$(cat "$D/open.out")" "$(cat "$D/open.log")"
fi
if grep -q 'runtime error\|AddressSanitizer' "$D/broker.log"; then
	not_ok "no sanitizer report from the broker" "$(grep -A5 'runtime error\|AddressSanitizer' "$D/broker.log" | head -n 20)"
else
	ok "no sanitizer report from the broker"
fi
plan_done
