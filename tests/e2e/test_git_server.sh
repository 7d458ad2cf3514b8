#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# Host only (no VM): the git-https-server test tool is a real git smart-HTTP server behind TLS —
# the host's git clones and pushes through it (protocol v2, gzip and chunked request bodies
# included), and it refuses a missing or wrong Authorization, logging which without the value.
. "$(dirname "$0")/lib.sh"

SERVER=$BUILD/tests/git-https-server
if [ ! -x "$SERVER" ] || ! command -v openssl > /dev/null || ! command -v git > /dev/null; then
	skip "git smart-HTTP server" "git-https-server, openssl or git missing (make test builds it)"
	plan_done; exit 0
fi
unset https_proxy HTTPS_PROXY http_proxy HTTP_PROXY ALL_PROXY all_proxy no_proxy NO_PROXY \
	GIT_ASKPASS SSH_ASKPASS GIT_DIR GIT_WORK_TREE
export HOME="$TMP" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=t GIT_AUTHOR_EMAIL=t@example.com GIT_COMMITTER_NAME=t \
	GIT_COMMITTER_EMAIL=t@example.com
IDLE=5
SECRET=gitsrv-7c1e94b2a0d35f68-secret
AUTH="Basic $(printf 'x-access-token:%s' "$SECRET" | base64 -w0)"

# A test CA and a certificate for localhost, and a second CA that signed nothing here.
mkca() { # NAME
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/$1.key" -out "$TMP/$1.pem" \
		-days 1 -subj "/CN=bulkhead-git-test-$1" 2> /dev/null
}
mkca ca && mkca otherca
openssl req -newkey rsa:2048 -nodes -keyout "$TMP/srv.key" -out "$TMP/srv.csr" \
	-subj /CN=localhost 2> /dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$TMP/srv.ext"
openssl x509 -req -in "$TMP/srv.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" -CAcreateserial \
	-out "$TMP/srv.pem" -days 1 -extfile "$TMP/srv.ext" 2> /dev/null

# The served bare repository: one commit on main, plus 40 branches so that a clone's request
# is large enough for git to gzip it.
mkdir -p "$TMP/root"
git init -q -b main "$TMP/src"
echo hello > "$TMP/src/README"
git -C "$TMP/src" add README && git -C "$TMP/src" commit -q -m first
TREE=$(git -C "$TMP/src" rev-parse 'main^{tree}')
i=1; while [ $i -le 40 ]; do
	c=$(echo "b$i" | git -C "$TMP/src" commit-tree "$TREE" -p main) &&
		git -C "$TMP/src" update-ref "refs/heads/b$i" "$c" || break
	i=$((i + 1))
done
git clone -q --bare "$TMP/src" "$TMP/root/repo.git"
FIRST=$(git --git-dir="$TMP/root/repo.git" rev-parse main)

"$SERVER" --cert "$TMP/srv.pem" --key "$TMP/srv.key" --root "$TMP/root" --auth "$AUTH" \
	--log "$TMP/server.log" --idle "$IDLE" > "$TMP/port" 2> "$TMP/server.err" &
SPID=$!
trap 'kill $SPID 2>/dev/null; rm -rf "$TMP"' EXIT
i=0; while [ ! -s "$TMP/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
PORT=$(cat "$TMP/port")
if [ -z "$PORT" ]; then
	not_ok "the server starts and prints its port" "$(cat "$TMP/server.err")"
	plan_done; exit 1
fi
ok "the server starts and prints its port"
URL=https://localhost:$PORT/repo.git

# g [git args]: the host's git, trusting the test CA and sending the Authorization header.
g() { GIT_SSL_CAINFO="$TMP/ca.pem" git -c http.extraHeader="Authorization: $AUTH" "$@"; }
# mark: the server log's length now; since N: its lines after the first N.
mark() { wc -l < "$TMP/server.log" 2> /dev/null || echo 0; }
since() { tail -n +$(($1 + 1)) "$TMP/server.log"; }
# logged N [grep args]: a line after the first N matches, waiting up to 5 s: the server logs a
# request after its answer is sent, so the client can finish first.
logged() {
	_n=$1; shift; _i=0
	while [ $_i -lt 50 ]; do
		since "$_n" | grep -q "$@" && return 0
		sleep 0.1; _i=$((_i + 1))
	done
	return 1
}

# A hung client (TLS up, no request) must not block the others; it is dropped after --idle.
mkfifo "$TMP/hung.in"
openssl s_client -quiet -connect "127.0.0.1:$PORT" -CAfile "$TMP/ca.pem" < "$TMP/hung.in" \
	> /dev/null 2>&1 &
HUNG=$!
exec 3> "$TMP/hung.in"
HUNG_START=$(date +%s)

m=$(mark)
if g clone -q "$URL" "$TMP/clone" 2> "$TMP/clone.err" &&
	[ "$(git -C "$TMP/clone" rev-parse HEAD)" = "$FIRST" ]; then
	ok "git clone over HTTPS with the Authorization header works and has the commit"
else
	not_ok "git clone over HTTPS with the Authorization header works and has the commit" \
		"$(cat "$TMP/clone.err")" "$(cat "$TMP/server.err")"
fi
check_eq "the clone has all 41 branches" 41 \
	"$(git -C "$TMP/clone" branch -r 2> /dev/null | grep -vc HEAD)"
logged "$m" "^POST /repo.git/git-upload-pack 200 auth=ok .* v2" &&
	ok "the clone used protocol v2 (Git-Protocol reached http-backend)" ||
	not_ok "the clone used protocol v2 (Git-Protocol reached http-backend)" "$(since "$m")"
logged "$m" "^POST /repo.git/git-upload-pack 200 auth=ok .* gzip" &&
	ok "a gzip request body is handled (Content-Encoding passed to http-backend)" ||
	not_ok "a gzip request body is handled (Content-Encoding passed to http-backend)" \
		"$(since "$m")"
if kill -0 "$HUNG" 2> /dev/null; then
	ok "the clone completed while another connection hung"
else
	skip "the clone completed while another connection hung" "the clone took longer than --idle"
fi
i=0; while kill -0 "$HUNG" 2> /dev/null && [ $i -lt 150 ]; do sleep 0.1; i=$((i + 1)); done
hung=$(($(date +%s) - HUNG_START))
if kill -0 "$HUNG" 2> /dev/null || [ "$hung" -lt "$((IDLE - 1))" ]; then
	not_ok "an idle connection is closed after --idle seconds" "--idle $IDLE, closed after ${hung}s"
else
	ok "an idle connection is closed after --idle seconds"
fi
kill "$HUNG" 2> /dev/null
exec 3>&-

# Push a small commit (Content-Length body), then a large one through a small post buffer,
# which git sends as a chunked body.
echo change >> "$TMP/clone/README"
git -C "$TMP/clone" commit -q -am second
m=$(mark)
if g -C "$TMP/clone" push -q origin main 2> "$TMP/push.err" &&
	[ "$(git --git-dir="$TMP/root/repo.git" rev-parse main)" = "$(git -C "$TMP/clone" rev-parse HEAD)" ]
then
	ok "git push works and moves the bare repository's ref"
else
	not_ok "git push works and moves the bare repository's ref" "$(cat "$TMP/push.err")" \
		"$(since "$m")"
fi
logged "$m" "^POST /repo.git/git-receive-pack 200 auth=ok body=[1-9]" &&
	ok "the push's body reached git-receive-pack" ||
	not_ok "the push's body reached git-receive-pack" "$(since "$m")"

head -c 300000 /dev/urandom > "$TMP/clone/big.bin"
git -C "$TMP/clone" add big.bin && git -C "$TMP/clone" commit -q -m big
m=$(mark)
if g -C "$TMP/clone" -c http.postBuffer=65536 push -q origin main 2> "$TMP/push2.err" &&
	[ "$(git --git-dir="$TMP/root/repo.git" rev-parse main)" = "$(git -C "$TMP/clone" rev-parse HEAD)" ] &&
	git --git-dir="$TMP/root/repo.git" cat-file blob main:big.bin | cmp -s - "$TMP/clone/big.bin"
then
	ok "a large push (chunked request body) arrives intact"
else
	not_ok "a large push (chunked request body) arrives intact" "$(cat "$TMP/push2.err")" \
		"$(since "$m")"
fi
logged "$m" -E "^POST /repo.git/git-receive-pack 200 auth=ok body=[0-9]{6,} chunked" &&
	ok "the large push's body was chunked and fully read" ||
	not_ok "the large push's body was chunked and fully read" "$(since "$m")"

# Without the header, or with a wrong one: 401, logged as absent / wrong.
m=$(mark)
if GIT_SSL_CAINFO="$TMP/ca.pem" git clone -q "$URL" "$TMP/noauth" 2> "$TMP/noauth.err"; then
	not_ok "a clone without the Authorization header fails"
else
	ok "a clone without the Authorization header fails"
fi
logged "$m" "^GET /repo.git/info/refs?service=git-upload-pack 401 auth=absent" &&
	ok "the log records the 401 as auth=absent" ||
	not_ok "the log records the 401 as auth=absent" "$(since "$m")"
m=$(mark)
if GIT_SSL_CAINFO="$TMP/ca.pem" git -c http.extraHeader="Authorization: Basic d3Jvbmc6d3Jvbmc=" \
	clone -q "$URL" "$TMP/wrongauth" 2> "$TMP/wrongauth.err"; then
	not_ok "a clone with a wrong Authorization header fails"
else
	ok "a clone with a wrong Authorization header fails"
fi
logged "$m" " 401 auth=wrong" && ok "the log records the 401 as auth=wrong" ||
	not_ok "the log records the 401 as auth=wrong" "$(since "$m")"
if grep -qF -e "$SECRET" -e "$AUTH" "$TMP/server.log" "$TMP/server.err"; then
	not_ok "the server's log never holds the credential"
else
	ok "the server's log never holds the credential"
fi

# A client trusting another CA refuses the server's certificate.
m=$(mark)
if GIT_SSL_CAINFO="$TMP/otherca.pem" git -c http.extraHeader="Authorization: $AUTH" \
	clone -q "$URL" "$TMP/wrongca" 2> "$TMP/wrongca.err"; then
	not_ok "a clone trusting another CA fails verification"
elif grep -qi "certificate" "$TMP/wrongca.err" && [ -z "$(since "$m")" ]; then
	ok "a clone trusting another CA fails verification"
else
	not_ok "a clone trusting another CA fails verification" "$(cat "$TMP/wrongca.err")" \
		"$(since "$m")"
fi

# What http-backend answers passes through: an unknown repository is 404.
m=$(mark)
g ls-remote "https://localhost:$PORT/nope.git" > /dev/null 2>&1
logged "$m" "^GET /nope.git/info/refs?service=git-upload-pack 404 auth=ok" &&
	ok "an unknown repository gets http-backend's 404" ||
	not_ok "an unknown repository gets http-backend's 404" "$(since "$m")"

# A malformed request gets 400.
m=$(mark)
printf 'GET /repo.git/info/refs HTTP/1.1\r\nHost: localhost\r\nBad Header\r\n\r\n' |
	openssl s_client -quiet -connect "127.0.0.1:$PORT" -CAfile "$TMP/ca.pem" \
		> "$TMP/bad.out" 2> /dev/null
if head -n 1 "$TMP/bad.out" | grep -q "^HTTP/1.1 400 " && logged "$m" " 400 "; then
	ok "a malformed request gets 400"
else
	not_ok "a malformed request gets 400" "$(head -c 300 "$TMP/bad.out")" "$(since "$m")"
fi
kill -0 "$SPID" 2> /dev/null && ok "the server is still running" ||
	not_ok "the server is still running" "$(cat "$TMP/server.err")"
plan_done
