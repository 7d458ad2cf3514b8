#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_github_app.sh: a github-app vault entry (broker/github_app.h), host
# only: a shared broker mints, for a session, an installation token narrowed to the one
# repository and permission its rule names, from a local server playing GitHub that checks the
# App's JWT with Debian's python3-jwt and serves git over smart HTTP (git http-backend); git
# clones and pushes through the broker (CONNECT, the session CA); the token does not reach the
# other repository; the session's end revokes it; the audit record names the kind and token
# id; no token in anything the client received, the broker's words or its records.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
SERVER=$(dirname "$0")/../tools/github_app_server.py
require "github-app entries" "$BROKER" "$CLIENT" openssl git py:jwt
D=$TMP
unset https_proxy HTTPS_PROXY http_proxy HTTP_PROXY ALL_PROXY all_proxy no_proxy NO_PROXY
export HOME="$D" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.com
if ! test_pki || ! openssl genrsa -out "$D/app.key" 2048 2> /dev/null ||
	! openssl rsa -in "$D/app.key" -pubout -out "$D/app.pub" 2> /dev/null; then
	not_ok "test PKI and the App's key made with openssl"
	plan_done
	exit 1
fi
mkdir -p "$D/root"
for r in app other; do
	git init -q -b main "$D/src-$r"
	echo "the $r repository" > "$D/src-$r/README"
	git -C "$D/src-$r" add README && git -C "$D/src-$r" commit -q -m first
	git clone -q --bare "$D/src-$r" "$D/root/$r.git"
done
"$PY" "$SERVER" "$D/up.pem" "$D/up.key" "$D/gh.log" "$D/app.pub" 4242 777 "$D/root" \
	> "$D/gh.port" 2> "$D/gh.err" &
pids="$pids $!"
PORT=$(wait_port "$D/gh.port")

export XDG_CONFIG_HOME="$D/cfg"
V="$XDG_CONFIG_HOME/bulkhead/vault"
"$BULKHEAD" vault init > /dev/null 2>&1
"$PY" -c 'import json, sys
print(json.dumps({"app_id": 4242, "installation_id": "777", "private_key": open(sys.argv[1]).read(),
                  "api_url": "https://localhost:%s" % sys.argv[2], "allow_addresses": ["127.0.0.1"]}))' \
	"$D/app.key" "$PORT" > "$D/doc.json"
"$BULKHEAD" vault put GH --kind github-app --from-file "$D/doc.json" > "$D/put.out" 2> "$D/put.err"
grep -q 'github-app' "$D/put.out" && ok "vault put --kind github-app checks and stores the App" ||
	not_ok "vault put --kind github-app" "$(cat "$D/put.out" "$D/put.err")"
sed 's/-----BEGIN/-----BEGIN BROKEN/' "$D/doc.json" |
	"$BULKHEAD" vault put BAD --kind github-app > /dev/null 2> "$D/put.err"
grep -q '"private_key" must be the App.s RSA key in PEM' "$D/put.err" && ! grep -q 'PRIVATE' "$D/put.err" &&
	ok "a key that is not one is refused, quoting nothing of it" ||
	not_ok "a broken key is refused" "$(cat "$D/put.err")"

cat > "$D/scope.json" << EOF2
{ "secrets": [
    { "name": "GH", "inject": { "basic": "x-access-token" },
      "github": { "repositories": ["app"], "permissions": { "contents": "write" } },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2
vault_broker "$D" "$V" || not_ok "a shared broker with session a, relayed" "$(cat "$D/broker.log")"
RPORT=$RELAY
g() { GIT_SSL_CAINFO="$D/session-ca.pem" git -c "http.proxy=http://127.0.0.1:$RPORT" "$@"; }

g clone -q "https://localhost:$PORT/app.git" "$D/work" > "$D/git.out" 2>&1 &&
	grep -q 'the app repository' "$D/work/README" &&
	ok "git clones the named repository with the minted token" ||
	not_ok "git clones the named repository" "$(cat "$D/git.out" "$D/broker.log")"
echo change >> "$D/work/README"
git -C "$D/work" commit -qam "from the session"
g -C "$D/work" push -q origin main >> "$D/git.out" 2>&1 &&
	git -C "$D/root/app.git" log --format=%s -1 | grep -q 'from the session' &&
	ok "git pushes with it" || not_ok "git pushes with the minted token" "$(cat "$D/git.out")"
check_eq "one token minted for the session, narrowed to the repository and permission" \
	"repos=app perms=contents:write" \
	"$(sed -n 's/^minted ghs_[0-9a-f]* //p' "$D/gh.log" | sort -u)"
g clone -q "https://localhost:$PORT/other.git" "$D/other" > "$D/other.out" 2>&1 &&
	not_ok "the token does not reach the other repository" ||
	ok "the other repository refuses the narrowed token ($(grep -o '403\|not allowed' "$D/other.out" | head -n 1))"
tok=$(sed -n 's/^issued //p' "$D/gh.log" | head -n 1)
rec=$(grep -h '"path":"/app.git/git-receive-pack"' "$D"/audit/* | tail -n 1)
echo "$rec" | grep -q "\"credentials\":\[{\"name\":\"GH\",\"kind\":\"github-app\",\"token_id\":\"sha256:[0-9a-f]\{12\}\",\"expires_at\":[0-9]*}\]" &&
	ok "the push's audit record names the kind, the token id and its expiry" ||
	not_ok "the audit record names the kind and token" "$rec"

# The session ends: its token is revoked.
kill "$holder"
i=0; while ! grep -q "^revoked $tok" "$D/gh.log" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
grep -q "^revoked $tok" "$D/gh.log" && ok "the session's end revokes its token" ||
	not_ok "the session's end revokes its token" "$(tail -n 5 "$D/gh.log"; tail -n 3 "$D/broker.log")"
leaks=0
for v in $(sed -n 's/^issued //p' "$D/gh.log"); do
	grep -qF "$v" "$D/git.out" "$D/other.out" "$D/broker.log" "$D"/audit/* "$V.state" && leaks=$((leaks + 1))
	grep -rqF "$v" "$D/work" && leaks=$((leaks + 1))
done
check_eq "no token in git's output, its checkout, the broker's words, records or state" 0 "$leaks"
kill -0 "$bpid" 2> /dev/null && ok "the broker serves on" || not_ok "the broker is alive"
plan_done
