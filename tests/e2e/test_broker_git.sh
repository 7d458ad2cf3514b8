#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end (QEMU engine here), the README's flow: tokens in the vault; a session whose
# command calls an HTTPS API with curl and clones, commits to and pushes a private repository
# with git — both over https:// through the broker (CONNECT, the session CA, the token
# injected on the way) — and then the token is searched for everywhere the guest was: its
# output, environment, files, the work share, and the whole guest RAM after the session.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
GITSRV=$BUILD/tests/git-https-server
for t in "$ECHO" "$GITSRV"; do
	if [ ! -x "$t" ]; then
		skip "curl and git through the broker" "$t not built (make test builds it)"
		plan_done; exit 0
	fi
done
if ! command -v openssl > /dev/null || ! command -v git > /dev/null; then
	skip "curl and git through the broker" "openssl or git missing on the host (make deps)"
	plan_done; exit 0
fi
unset https_proxy HTTPS_PROXY http_proxy HTTP_PROXY ALL_PROXY all_proxy no_proxy NO_PROXY
export HOME="$TMP" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=host GIT_AUTHOR_EMAIL=host@example.com GIT_COMMITTER_NAME=host \
	GIT_COMMITTER_EMAIL=host@example.com
export BULKHEAD_RUNDIR="$TMP/run"
API_TOKEN='api-tok-3f9c2e7d1a5b44e1-secret'
GIT_TOKEN='ghx-tok-8b0d6c1f29e3a7d5-secret'
pids=""
trap 'for p in $pids; do kill $p 2>/dev/null; done; rm -rf "$TMP"' EXIT

if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi

# The API (an echo) and the private repository: one commit whose file the guest must see.
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/api.log" > "$TMP/api.port" \
	2> /dev/null &
pids="$pids $!"
mkdir -p "$TMP/root"
git init -q -b main "$TMP/src"
echo 'hello-from-the-private-repo-5e2a' > "$TMP/src/README"
git -C "$TMP/src" add README && git -C "$TMP/src" commit -q -m first
git clone -q --bare "$TMP/src" "$TMP/root/repo.git"
"$GITSRV" --cert "$TMP/up.pem" --key "$TMP/up.key" --root "$TMP/root" \
	--auth "Basic $(printf 'x-access-token:%s' "$GIT_TOKEN" | base64 -w0)" \
	--log "$TMP/git.log" > "$TMP/git.port" 2> "$TMP/git.err" &
pids="$pids $!"
i=0; while { [ ! -s "$TMP/api.port" ] || [ ! -s "$TMP/git.port" ]; } && [ $i -lt 100 ]; do
	sleep 0.05; i=$((i + 1)); done
APORT=$(cat "$TMP/api.port")
GPORT=$(cat "$TMP/git.port")

"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
printf '%s' "$API_TOKEN" | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
printf '%s' "$GIT_TOKEN" | "$BULKHEAD" vault put git --vault "$TMP/vault" > /dev/null 2>&1
cat > "$TMP/scope.json" << SCOPE
{
  "secrets": [
    { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $APORT,
                          "path_prefix": "/v1/", "allow_addresses": ["127.0.0.1"] } ] },
    { "name": "git", "inject": { "basic": "x-access-token" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $GPORT,
                          "path_prefix": "/repo.git/", "allow_addresses": ["127.0.0.1"] } ] }
  ]
}
SCOPE
mkdir "$TMP/work"
cat > "$TMP/work/job.sh" << JOB
set -x
curl -sS -w '\nhttp=%{http_version}\n' https://localhost:$APORT/v1/items; echo "curl=\$?"
git clone https://localhost:$GPORT/repo.git; echo "clone=\$?"
cd repo && cat README
echo 'from the guest' > guest.txt && git add guest.txt &&
	git -c user.name=guest -c user.email=guest@example.com commit -q -m guest-commit-4d1f
git push origin HEAD:main; echo "push=\$?"
env; cat /proc/self/environ; git config --list --show-origin
JOB
run_capture run --mem 256 --ram-file "$TMP/guest.ram" --work "$TMP/work" --scope "$TMP/scope.json" \
	--vault "$TMP/vault" --ca-file "$TMP/ca.pem" --audit "$TMP/audit.log" -- sh job.sh
check_eq "the session's command exits 0" 0 "$rc"
if grep -qx 'curl=0' "$TMP/out" && grep -q '^GET /v1/items' "$TMP/out" &&
	grep -qx "Authorization: Bearer $API_TOKEN" "$TMP/api.log"; then
	ok "curl https:// in the guest: through the broker's CONNECT, the API sees the injected token"
	# The guest's curl offers h2 in the tunnel's TLS: the broker's HTTP/2 front served it.
	check_eq "the guest's curl spoke HTTP/2 to the broker" "http=2" "$(grep -a '^http=' "$TMP/out")"
else
	not_ok "curl through CONNECT" "$(head -c 800 "$TMP/out")" "$(tail -c 800 "$TMP/err")"
fi
if grep -qx 'clone=0' "$TMP/out" && grep -qx 'hello-from-the-private-repo-5e2a' "$TMP/out"; then
	ok "git clone of the private repository over https works in the guest"
else
	not_ok "git clone in the guest" "$(tail -c 800 "$TMP/err")" "$(cat "$TMP/git.log")"
fi
if grep -qx 'push=0' "$TMP/out" &&
	[ "$(git --git-dir="$TMP/root/repo.git" log -1 --format=%s main)" = guest-commit-4d1f ]; then
	ok "git push from the guest moves the server's branch"
else
	not_ok "git push from the guest" "$(tail -c 800 "$TMP/err")" "$(cat "$TMP/git.log")"
fi
if grep -q 'auth=ok' "$TMP/git.log" && ! grep -Eq 'auth=(absent|wrong)' "$TMP/git.log"; then
	ok "every git request reached the server with the injected credential"
else
	not_ok "git requests carried the credential" "$(cat "$TMP/git.log")"
fi

# Where the tokens must not be: anything the guest printed (environment, git config), the
# work share on the host, and the guest's RAM as it was when the session ended — which also
# holds every file the guest had outside the share (its root is in RAM). The job never names
# the tokens itself: the search happens here, on the host.
if grep -qF -e "$API_TOKEN" -e "$GIT_TOKEN" "$TMP/out" "$TMP/err"; then
	not_ok "no token in the guest's output, environment or git config"
else
	ok "no token in the guest's output, environment or git config"
fi
if grep -rqF -e "$API_TOKEN" -e "$GIT_TOKEN" "$TMP/work"; then
	not_ok "no token in the work share (the clone included)"
else
	ok "no token in the work share (the clone included)"
fi
if [ -s "$TMP/guest.ram" ] && grep -qaF 'hello-from-the-private-repo-5e2a' "$TMP/guest.ram"; then
	if grep -qaF -e "$API_TOKEN" -e "$GIT_TOKEN" "$TMP/guest.ram" ||
		grep -qaF "$(printf 'x-access-token:%s' "$GIT_TOKEN" | base64 -w0)" "$TMP/guest.ram"
	then
		not_ok "no token (raw or as Basic credentials) anywhere in the guest's RAM"
	else
		ok "no token (raw or as Basic credentials) anywhere in the $(($(stat -c %s "$TMP/guest.ram") >> 20)) MiB of guest RAM (which does hold the cloned file)"
	fi
else
	not_ok "the guest's RAM was kept for the scan and holds what the guest read" \
		"$(ls -la "$TMP/guest.ram" 2>&1)"
fi
"$BULKHEAD" audit verify "$TMP/audit.log" > /dev/null 2>&1
check_eq "the audit chain verifies" 0 "$?"
if grep -q '"secrets":\["api"\]' "$TMP/audit.log" && grep -q '"secrets":\["git"\]' "$TMP/audit.log" &&
	! grep -qF -e "$API_TOKEN" -e "$GIT_TOKEN" "$TMP/audit.log"; then
	ok "the audit log names both secrets, never their values"
else
	not_ok "audit records" "$(cat "$TMP/audit.log")"
fi
plan_done
