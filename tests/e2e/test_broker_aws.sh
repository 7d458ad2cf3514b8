#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_aws.sh: aws-sigv4 vault entries (broker/aws_sigv4.h, aws_s3.h), host
# only: Debian's python3-boto3 with placeholder keys calls S3 and Lambda through a shared
# broker, which signs each request with the real key; a local server checks every signature
# with botocore's own signer (tests/tools/aws_server.py). Put, get, list and delete within the
# rule's bucket prefix; refused outside it (another prefix, another bucket, a copy source,
# a bucket's policy), for another region, as a presigned URL, as chunk-signed streaming; a
# Lambda call whose body the broker hashes; the guest's clock ignored; a key rotated in the
# vault taken by the next request; the secret key never in what the client received, the
# broker's words, its records.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
TOOLS=$(dirname "$0")/../tools
require "aws-sigv4 entries" "$BROKER" "$CLIENT" openssl py:boto3
# Debian's boto3 when there is another first on PATH: the SDK this suite is about.
/usr/bin/python3 -c 'import boto3' 2> /dev/null && PY=/usr/bin/python3
D=$TMP
unset https_proxy HTTPS_PROXY http_proxy HTTP_PROXY ALL_PROXY all_proxy no_proxy NO_PROXY
unset AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_SESSION_TOKEN AWS_PROFILE
export AWS_CONFIG_FILE=/dev/null AWS_SHARED_CREDENTIALS_FILE=/dev/null
if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
AKID=AKIAREALKEY7Q2X9TEST SECRET='wJalrXUtnREAL/K7MDENG+bPxSECRET4471x'
TOKEN='IQoJb3JpZ2luX2VjREALTOKEN/5521+session'
printf '{"%s": ["%s", null]}' "$AKID" "$SECRET" > "$D/keys.json"
"$PY" "$TOOLS/aws_server.py" "$D/up.pem" "$D/up.key" "$D/aws.log" "$D/keys.json" \
	> "$D/aws.port" 2> "$D/aws.err" &
pids="$pids $!"
PORT=$(wait_port "$D/aws.port")

export XDG_CONFIG_HOME="$D/cfg"
V="$XDG_CONFIG_HOME/bulkhead/vault"
"$BULKHEAD" vault init > /dev/null 2>&1
printf '{"access_key_id": "%s", "secret_access_key": "%s"}' "$AKID" "$SECRET" |
	"$BULKHEAD" vault put AWS --kind aws-sigv4 > "$D/put.out" 2> "$D/put.err"
printf '{"access_key_id": "%s", "secret_access_key": "%s"}' "$AKID" "$SECRET" |
	"$BULKHEAD" vault put LAMBDA --kind aws-sigv4 > /dev/null 2>&1
printf '{"access_key_id": "%s", "secret_access_key": "%s"}' "$AKID" "$SECRET" |
	"$BULKHEAD" vault put AWSHDR --kind aws-sigv4 > /dev/null 2>&1
grep -q 'aws-sigv4' "$D/put.out" && ok "vault put --kind aws-sigv4 checks and stores the key" ||
	not_ok "vault put --kind aws-sigv4" "$(cat "$D/put.out" "$D/put.err")"
printf '{"access_key_id": "%s", "secret_access_key": "%s", "region": "x"}' "$AKID" "$SECRET" |
	"$BULKHEAD" vault put BAD --kind aws-sigv4 > /dev/null 2> "$D/put.err"
grep -q 'unknown key "region"' "$D/put.err" && ! grep -qF "$SECRET" "$D/put.err" &&
	ok "a document with an unknown key is refused, quoting nothing of it" ||
	not_ok "an unknown key in an aws-sigv4 document is refused" "$(cat "$D/put.err")"

dest() { # HOST [PATH_PREFIX]
	printf '{ "scheme": "https", "host": "%s", "port": %s, %s"allow_addresses": ["127.0.0.1"] }' \
		"$1" "$PORT" "${2:+\"path_prefix\": \"$2\", }"
}
cat > "$D/scope.json" << EOF2
{ "secrets": [
    { "name": "AWS", "inject": { "aws_sigv4": { "service": "s3", "region": "us-east-1" } },
      "s3": [ "agent-data/runs/" ], "destinations": [ $(dest localhost) ] },
    { "name": "LAMBDA", "inject": { "aws_sigv4": { "service": "lambda", "region": "us-east-1" } },
      "destinations": [ $(dest 127.0.0.1 /2015-03-31/functions/agent-fn/) ] },
    { "name": "AWSHDR", "inject": { "header": "X-Api-Key", "value": "{}" },
      "destinations": [ $(dest 127.0.0.1 /hdr/) ] } ] }
EOF2
vault_broker "$D" "$V" || not_ok "a shared broker with session a, relayed" "$(cat "$D/broker.log")"
RPORT=$RELAY
aws() { # CASE [ENDPOINT]
	timeout 120 "$PY" "$TOOLS/aws_client.py" "http://127.0.0.1:$RPORT" "$D/session-ca.pem" \
		"${2:-https://localhost:$PORT}" "$1" 2>> "$D/client.err" | tee -a "$D/seen"
}
aws s3 > "$D/s3.out"
line() { grep "^[a-z]* $1 " "$D/s3.out" || grep "^[a-z]* $1\$" "$D/s3.out"; }
check_eq "boto3 puts an object within the prefix, signed by the broker" ok "$(line put | cut -d' ' -f1)"
check_eq "... and gets it back" "ok get b'hello from the session'" "$(line get)"
check_eq "... a 256 KiB object both ways (streamed with its length)" "ok get-big True" "$(line get-big)"
check_eq "... lists the prefix" "ok list ['runs/a.txt', 'runs/big.bin']" "$(line list)"
check_eq "... deletes" "ok delete 204" "$(line delete)"
check_eq "... copies within the prefix (a PUT of no body keeps its Content-Length: 0)" \
	"ok get-copy b'hello from the session'" "$(line get-copy)"
check_eq "the server verified every one with the real key" 8 \
	"$(grep -v tattle "$D/aws.log" | grep -c '^ok .* s3 us-east-1$')"
refused() { # STEP WHAT PATTERN
	l=$(line "$1")
	case $l in
	"refused $1 403 "*) echo "$l" | grep -q "$3" && ok "refused by the broker: $2" ||
		not_ok "refused by the broker, saying why: $2" "$l" ;;
	*) not_ok "refused by the broker: $2" "$l" ;;
	esac
}
refused put-outside "a key outside the prefix" "agent-data/other/x"
refused get-other-bucket "another bucket" "billing/runs/a.txt"
refused list-outside "a listing of another prefix" "listing is of agent-data/other/"
refused list-all "a listing of the whole bucket" "listing is of agent-data"
refused copy-from-outside "a copy whose source is outside" "copy source"
refused bucket-policy "the bucket's policy" "on the bucket itself"
refused public-read "an object made public (x-amz-acl)" "does not sign x-amz-acl"
check_eq "none of those reached the server" 0 \
	"$(grep -c -e other/ -e billing -e '?policy' -e 'runs/pub' "$D/aws.log")"
case $(line presigned) in
"refused presigned 400 "*"presigned URL"*) ok "a presigned URL is refused, saying why" ;;
*) not_ok "a presigned URL is refused" "$(line presigned)" ;;
esac
case $(line tattle) in
"ok tattle keys: [bulkhead:redacted]"*) ok "a server's echo of the secret key is scrubbed" ;;
*) not_ok "a server's echo of the secret key is scrubbed" "$(line tattle)" ;;
esac

aws lambda "https://127.0.0.1:$PORT" > "$D/lambda.out"
check_eq "boto3 invokes Lambda: the broker hashed the body to sign it" \
	"ok invoke {\"invoked\": \"agent-fn\", \"payload\": {\"n\": 41}}" "$(cat "$D/lambda.out")"
grep -q '^ok POST /2015-03-31/functions/agent-fn/invocations lambda us-east-1$' "$D/aws.log" &&
	ok "... and the server verified it as lambda" || not_ok "the server verified the Lambda call" "$(tail -n 2 "$D/aws.log")"
case $(aws region) in
"refused other-region 403 "*"signed for s3 in eu-west-1"*) ok "a request signed for another region is refused" ;;
*) not_ok "a request signed for another region is refused" "$(tail -n 1 "$D/seen")" ;;
esac

# Raw requests: what an SDK would not send, and a guest whose clock is wrong.
raw() { # EXTRA-HEADERS: a GET within the prefix, the answer's status line
	printf 'GET https://localhost:%s/agent-data/runs/a.txt HTTP/1.1\r\nHost: localhost:%s\r\n%bConnection: close\r\n\r\n' \
		"$PORT" "$PORT" "$1" | timeout 30 "$CLIENT" raw "$D/a.sock" | tee -a "$D/seen" > "$D/raw.out"
	head -n 1 "$D/raw.out" | tr -d '\r'
}
sig="Authorization: AWS4-HMAC-SHA256 Credential=AKIAPLACEHOLDER00000/20010101/us-east-1/s3/aws4_request, SignedHeaders=host;x-amz-date, Signature=00\r\n"
check_eq "a guest whose clock says 2001: the broker's own date is signed" "HTTP/1.1 200 OK" \
	"$(raw "${sig}X-Amz-Date: 20010101T000000Z\r\nX-Amz-Content-SHA256: UNSIGNED-PAYLOAD\r\n")"
st=$(raw "${sig}X-Amz-Content-SHA256: STREAMING-AWS4-HMAC-SHA256-PAYLOAD\r\n")
[ "$st" = "HTTP/1.1 400 Bad Request" ] && grep -q 'chunks are signed' "$D/raw.out" &&
	ok "chunk-signed streaming is refused, saying why" || not_ok "chunk-signed streaming is refused" "$st $(tail -n 1 "$D/raw.out")"
check_eq "a SigV4 Authorization that does not parse is refused" "HTTP/1.1 400 Bad Request" \
	"$(raw 'Authorization: AWS4-HMAC-SHA256 Credential=x\r\n')"
check_eq "a placeholder of the key is never replaced" "HTTP/1.1 403 Forbidden" \
	"$(raw 'X-Leak: BULKHEAD_SECRET_AWS\r\n')"
# What a server may read one way and the broker another: a field or a parameter given twice.
check_eq "an x-amz-copy-source given twice is refused" "HTTP/1.1 400 Bad Request" \
	"$(raw 'x-amz-copy-source: billing/k\r\nx-amz-copy-source: agent-data/runs/a.txt\r\n')"
st=$(printf 'GET https://localhost:%s/agent-data?list-type=2&prefix=runs%%2F&prefix= HTTP/1.1\r\nHost: localhost:%s\r\nConnection: close\r\n\r\n' \
	"$PORT" "$PORT" | timeout 30 "$CLIENT" raw "$D/a.sock" | tee -a "$D/seen" | head -n 1 | tr -d '\r')
check_eq "a listing's prefix given twice is refused" "HTTP/1.1 403 Forbidden" "$st"
check_eq "none of those reached the server" 0 "$(grep -c -e billing -e 'prefix=runs%2F&prefix' "$D/aws.log")"
# The key under a rule that would inject it: not available, and never sent.
st=$(printf 'GET https://127.0.0.1:%s/hdr/x HTTP/1.1\r\nHost: 127.0.0.1:%s\r\nConnection: close\r\n\r\n' \
	"$PORT" "$PORT" | timeout 30 "$CLIENT" raw "$D/a.sock" | tee -a "$D/seen" | tr -d '\r')
case $st in
"HTTP/1.1 503 "*"it is an aws-sigv4 key, which signs requests"*) ok "an aws-sigv4 key under a header rule is not available (503), never injected" ;;
*) not_ok "an aws-sigv4 key under a header rule is refused" "$st" ;;
esac
check_eq "... and nothing reached the server" 0 "$(grep -c '/hdr/' "$D/aws.log")"

# Rotation: a new key in the vault signs the next request; the server knows only the new one.
AKID2=AKIAROTATEDKEY55TEST SECRET2='rotated/SECRET+key-9902-abcdefghij'
printf '{"%s": ["%s", "%s"]}' "$AKID2" "$SECRET2" "$TOKEN" > "$D/keys.json"
printf '{"access_key_id": "%s", "secret_access_key": "%s", "session_token": "%s"}' \
	"$AKID2" "$SECRET2" "$TOKEN" | "$BULKHEAD" vault put AWS --kind aws-sigv4 > /dev/null 2>&1
check_eq "a key (with a session token) rotated in the vault signs the next request" \
	"ok get b'hello from the session'" "$(aws get)"
rec=$(grep -h '"path":"/agent-data/runs/a.txt"' "$D"/audit/* | tail -n 1)
echo "$rec" | grep -q '"credentials":\[{"name":"AWS","kind":"aws-sigv4"}\]' &&
	ok "the audit record names the key and its kind" || not_ok "the audit record names the kind" "$rec"

# A role: the broker asks STS (the server's AssumeRole, signed with the entry's key) for the
# session's own credentials, with the rule's session policy, and signs with those.
put_role() { # NAME ROLE
	printf '{"access_key_id": "%s", "secret_access_key": "%s", "session_token": "%s", "role_arn": "%s", "sts_url": "https://localhost:%s/", "duration_seconds": 900, "allow_addresses": ["127.0.0.1"]}' \
		"$AKID2" "$SECRET2" "$TOKEN" "$2" "$PORT" | "$BULKHEAD" vault put "$1" --kind aws-sigv4 > /dev/null 2> "$D/put.err" ||
		not_ok "vault put --kind aws-sigv4 with a role" "$(cat "$D/put.err")"
}
put_role ROLE arn:aws:iam::123456789012:role/agent
put_role DENIED arn:aws:iam::123456789012:role/denied
POLICY='{"Statement":[{"Action":"s3:GetObject","Effect":"Allow","Resource":"arn:aws:s3:::agent-data/runs/*"}],"Version":"2012-10-17"}'
cat > "$D/scope-b.json" << EOF2
{ "secrets": [
    { "name": "ROLE", "inject": { "aws_sigv4": { "service": "s3", "region": "us-east-1",
                                                  "session_policy": $POLICY } },
      "s3": [ "agent-data/runs/" ], "destinations": [ $(dest localhost) ] },
    { "name": "DENIED", "inject": { "aws_sigv4": { "service": "lambda", "region": "us-east-1" } },
      "destinations": [ $(dest 127.0.0.1 /2015-03-31/functions/agent-fn/) ] } ] }
EOF2
broker_register "$D/ctl.sock" b "$D/scope-b.json" "$D/b.sock" "$D"
mkdir "$D/b"
relay_to "$D/b.sock" "$D/b" || not_ok "session b relayed" "$(cat "$D/b.reg")"
role() { # CASE [ENDPOINT]
	timeout 120 "$PY" "$TOOLS/aws_client.py" "http://127.0.0.1:$RELAY" "$D/b/session-ca.pem" \
		"${2:-https://localhost:$PORT}" "$1" 2>> "$D/client.err" | tee -a "$D/seen"
}
check_eq "a session's rule with a role: boto3 gets, signed with the session's own credentials" \
	"ok get b'hello from the session'" "$(role get)"
check_eq "... and again, with the same credentials" "ok get b'hello from the session'" "$(role get)"
check_eq "STS was asked once, for the role, with the rule's session policy, for 900 s" \
	"arn:aws:iam::123456789012:role/agent policy=$POLICY duration=900" \
	"$(sed -n 's/^assumed \(.*\) session=bulkhead-[0-9a-f]\{12\}$/\1/p' "$D/aws.log")"
tmpkey=$(sed -n 's/^minted \(ASIA[0-9A-F]*\) .*/\1/p' "$D/aws.log")
tmpsecret=$(sed -n 's/^minted ASIA[0-9A-F]* \([^ ]*\) .*/\1/p' "$D/aws.log")
case $(role tattle) in
*"keys: "*"[bulkhead:redacted]"*) grep -qF "$tmpsecret" "$D/seen" &&
	not_ok "the server's echo of the session's own credentials is scrubbed" ||
	ok "the server's echo of the session's own credentials is scrubbed" ;;
*) not_ok "the server's echo of the session's own credentials is scrubbed" "$(tail -n 1 "$D/seen")" ;;
esac
check_eq "the requests were signed with the minted key" 3 "$(grep -c "^key $tmpkey\$" "$D/aws.log")"
rec=$(grep -h '"session":"b"' "$D"/audit/* | grep '"path":"/agent-data/runs/a.txt"' | tail -n 1)
echo "$rec" | grep -q '"credentials":\[{"name":"ROLE","kind":"aws-sigv4","token_id":"sha256:[0-9a-f]\{12\}","expires_at":[0-9]*}\]' &&
	ok "the audit record names the credentials' id and expiry" || not_ok "the audit record names the role's credentials" "$rec"
case $(role lambda "https://127.0.0.1:$PORT") in
"refused invoke 503 "*"secret DENIED"*"STS localhost answered 403 (AccessDenied)"*)
	ok "a role STS refuses: 503 naming the secret and STS's code, never its words" ;;
*) not_ok "a role STS refuses is a 503 naming the secret" "$(tail -n 1 "$D/seen")" ;;
esac
grep -q "not for you" "$D/seen" "$D/broker.log" && not_ok "STS's message reaches no one" ||
	ok "STS's message (which repeats the key) reaches neither the client nor the log"
# The entry changes under a running session: its next request follows the entry, never the
# credentials obtained for the role before.
put_role ROLE arn:aws:iam::123456789012:role/denied
case $(role get) in
"refused get 503 "*"STS localhost answered 403 (AccessDenied)"*) ok "a role changed in the vault: the running session's next request asks for it (refused here)" ;;
*) not_ok "a role changed in the vault takes effect in a running session" "$(tail -n 1 "$D/seen")" ;;
esac
put_role ROLE arn:aws:iam::123456789012:role/agent
check_eq "... and put back: new credentials" "ok get b'hello from the session'" "$(role get)"
check_eq "... STS asked again for each change" 2 "$(grep -c '^assumed arn:aws:iam::123456789012:role/agent ' "$D/aws.log")"

leaks=0
for v in $(sed -n 's/^minted ASIA[0-9A-F]* //p' "$D/aws.log"); do
	grep -qF "$v" "$D/seen" "$D/client.err" "$D/broker.log" "$D"/audit/* && leaks=$((leaks + 1))
done
check_eq "no temporary secret key or session token in anything the client or the log saw" 0 "$leaks"
for v in "$SECRET" "$SECRET2" "$TOKEN"; do
	grep -qF "$v" "$D/seen" "$D/client.err" "$D/broker.log" "$D"/audit/* && leaks=$((leaks + 1))
done
check_eq "no secret key or token in what the client received, the broker's words or records" 0 "$leaks"
kill -0 "$bpid" 2> /dev/null && ok "the broker serves on" || not_ok "the broker is alive"
plan_done
