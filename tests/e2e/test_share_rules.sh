#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/e2e/test_share_rules.sh: rules inside the work share and credential files kept out of
# it, in real sessions (QEMU engine here), every call made from the guest by a static probe
# (tests/guest-tools/share_probe.c) so that no tool's fallback hides what the kernel said.
#  - src/ rw, config/ ro, secrets/ and a/secrets/ hidden, later/ (missing) ro: the guest
#    writes in src/; every write path into config/ is refused (open, create, rename into, out
#    of and within it, link both ways, chmod, truncate, xattr, utimes, unlink, mkdir, rmdir,
#    symlink, mkfifo, and the directory itself renamed or removed); secrets/ is an empty
#    directory to stat, readdir, open by name, O_PATH and ".." walks; no directory on a rule's
#    way can be renamed (a/ for a/secrets, deep/ and deep/x for deep/x/y, conf/ for the hidden
#    file conf/pw): the guest cannot put a directory of its own where a rule was, nor move a
#    hidden file out from under its rule for the next session; the made-up later/ takes
#    nothing, is said on stderr and gone afterwards; the host's files are unchanged; nothing
#    of the secrets is anywhere the guest can read.
#  - A checkout with credential files and a token in its remote: refused, naming them; with
#    --share-secrets hide the guest sees none of their bytes (its whole view grepped, and its
#    RAM after the session), its .git/config has the remote without the token, and git push
#    through the broker (the scope's credential injected) moves the server's branch.
. "$(dirname "$0")/lib.sh"

PROBE=$BUILD/tests/guest-tools/share-probe
GITSRV=$BUILD/tests/git-https-server
require "share rules" "$BULKHEAD" "$PROBE" "$GITSRV" git openssl
export BULKHEAD_RUNDIR="$TMP/run"
mkdir -m 700 "$TMP/run"

W=$TMP/w
mkdir -p "$W/src" "$W/config/sub" "$W/secrets" "$W/a/secrets" "$W/deep/x/y" "$W/conf"
cp "$PROBE" "$W/probe"
echo src-file > "$W/src/a.txt"
echo config-yaml > "$W/config/app.yaml"
echo x > "$W/config/sub/x"
echo TOPSECRET-5f2c9e > "$W/secrets/key.txt"
echo NESTEDSECRET-9a1b77 > "$W/a/secrets/key.txt"
echo deep-ro > "$W/deep/x/y/f"
echo FILESECRET-71c0d2 > "$W/conf/pw"
tree_sum() { (cd "$W" && find config secrets a deep conf -type f -exec sha256sum {} + | sort); }
before=$(tree_sum)

cat > "$W/job.sh" << 'JOB'
P=/work/probe
cd /work
t() { printf '%s|' "$*"; "$P" "$@"; }
t create src/new.txt
t open-w config/app.yaml
t create config/new
t rename config/app.yaml src/moved
t rename src/a.txt config/in
t rename config/app.yaml config/renamed
t link config/app.yaml src/l
t link src/a.txt config/l
t chmod config/app.yaml
t truncate config/app.yaml
t setxattr config/app.yaml
t utimes config/app.yaml
t unlink config/app.yaml
t mkdir config/d
t rmdir config/sub
t symlink x config/s
t mkfifo config/f
t rename config src/config2
t rmdir config
t open-r config/app.yaml
t stat secrets
t readdir secrets
t open-r secrets/key.txt
t stat secrets/key.txt
t opath secrets/key.txt
t open-r src/../secrets/key.txt
t open-r secrets/../secrets/key.txt
t link secrets/key.txt src/k
t rename secrets src/s2
t create secrets/planted
t held a/secrets a b key.txt
t open-r b/secrets/key.txt
t readdir b/secrets
t rename deep deep_old
t rename deep/x deep/x2
t mkdir deep/x/y2
t rename conf conf2
t open-r conf/pw
t stat later
t create later/x
t readdir .
# [T], [x]: the patterns do not match this script's own text.
echo "grep|$(grep -ral -e TOPSECRE[T] -e NESTEDSECRE[T] -e FILESECRE[T] /work 2>/dev/null | tr '\n' ' ')"
JOB
run_capture run --work "$W" --work-rule src:rw --work-rule config:ro --work-rule secrets:hidden \
	--work-rule a/secrets:hidden --work-rule later:ro --work-rule deep/x/y:ro \
	--work-rule conf/pw:hidden -- sh job.sh
check_eq "the session with rules runs (exit 0)" 0 "$rc"
[ "$rc" = 0 ] || echo "# $(head -c 800 "$TMP/err")"
# expect CALL RESULT...: the probe's line for CALL.
bad=
expect() {
	_call=$1
	shift
	_got=$(grep -F -x "$_call|$*" "$TMP/out")
	[ -n "$_got" ] || bad="$bad
$_call: want '$*', got '$(grep -F "$_call|" "$TMP/out" | head -n 1 | cut -d'|' -f2-)'"
}
expect "create src/new.txt" ok
expect "open-w config/app.yaml" EROFS
expect "create config/new" EROFS
expect "rename config/app.yaml src/moved" EXDEV
expect "rename src/a.txt config/in" EXDEV
expect "rename config/app.yaml config/renamed" EROFS
expect "link config/app.yaml src/l" EXDEV
expect "link src/a.txt config/l" EROFS
expect "chmod config/app.yaml" EROFS
expect "truncate config/app.yaml" EROFS
expect "utimes config/app.yaml" EROFS
expect "unlink config/app.yaml" EROFS
expect "mkdir config/d" EROFS
expect "rmdir config/sub" EROFS
expect "symlink x config/s" EROFS
expect "mkfifo config/f" EROFS
expect "rename config src/config2" EXDEV
expect "rmdir config" EBUSY
expect "open-r config/app.yaml" ok 12 bytes
check_eq "read-only config/: every write path refused (EROFS; EXDEV across its border, the directory itself moved too; EBUSY to remove it), its files readable" "" "$bad"
if grep -F 'setxattr config/app.yaml|ok' "$TMP/out" > /dev/null; then
	not_ok "setxattr in config/ is refused" "$(grep setxattr "$TMP/out")"
else
	ok "setxattr in config/ is refused ($(grep -F 'setxattr config/app.yaml|' "$TMP/out" | cut -d'|' -f2))"
fi
bad=
expect "stat secrets" ok dir
expect "readdir secrets" ok
expect "open-r secrets/key.txt" ENOENT
expect "stat secrets/key.txt" ENOENT
expect "opath secrets/key.txt" ENOENT
expect "open-r src/../secrets/key.txt" ENOENT
expect "open-r secrets/../secrets/key.txt" ENOENT
expect "link secrets/key.txt src/k" ENOENT
expect "rename secrets src/s2" EXDEV
expect "create secrets/planted" EROFS
check_eq "hidden secrets/: an empty directory to stat, readdir, open, O_PATH, .. walks, link and rename" "" "$bad"
bad=
if grep -q '^held a/secrets a b key.txt|rename EBUSY' "$TMP/out" &&
	grep -q '^openat ENOENT' "$TMP/out" && grep -q '^proc ENOENT' "$TMP/out"; then
	ok "the parent of a hidden directory cannot be renamed (EBUSY), and a descriptor held on it reaches nothing"
else
	not_ok "a hidden directory's parent renamed, or a descriptor held on it" "$(grep -A2 '^held' "$TMP/out")"
fi
expect "open-r b/secrets/key.txt" ENOENT
expect "readdir b/secrets" ENOENT
expect "rename deep deep_old" EBUSY
expect "rename deep/x deep/x2" EBUSY
expect "mkdir deep/x/y2" ok
expect "rename conf conf2" EBUSY
expect "open-r conf/pw" ok 0 bytes
expect "stat later" ok dir
expect "create later/x" EROFS
check_eq "no directory on a rule's way can be moved (EBUSY), the rest of it stays writable; the missing later/ is an empty read-only directory" "" "$bad"
if grep -q 'rule later:ro: the path is not there, so it is made empty' "$TMP/err"; then
	ok "a read-only or hidden rule on a missing path is said on stderr"
else
	not_ok "a missing rule's path is not said" "$(head -c 600 "$TMP/err")"
fi
check_eq "no secret's bytes anywhere in the guest's view of the share" "grep|" "$(grep '^grep|' "$TMP/out")"
check_eq "the host's config/, secrets/, a/secrets/, deep/x/y and conf/pw are unchanged" "$before" "$(tree_sum)"
if [ -f "$W/src/new.txt" ] && [ ! -e "$W/later" ]; then
	ok "the guest's write in src/ is on the host; later/, made for its rule, is gone"
else
	not_ok "src/ written, later/ removed" "$(ls -la "$W" "$W/src")"
fi

# The rules' mounts are locked where virtiofsd serves: a virtiofsd taken over can neither
# unmount a cover nor make a read-only path (or a read-only share) writable again.
LOCK=$BUILD/tests/mount-lock-check
if [ "$(id -u)" != 0 ] || [ ! -x "$LOCK" ]; then
	skip "the rules' mounts are locked in virtiofsd's namespace" "needs root and $LOCK"
else
	"$BULKHEAD" run --work "$W:ro" --work-rule secrets:hidden --work-rule config:ro \
		--work-rule later2:hidden -- sleep 8 > /dev/null 2> "$TMP/lock.err" &
	lpid=$!
	fsd= i=0
	while [ -z "$fsd" ] && [ $i -lt 100 ]; do
		for p in $(pgrep -f "virtiofsd.*source=$W"); do
			[ "$(readlink /proc/$p/ns/pid)" != "$(readlink /proc/self/ns/pid)" ] && fsd=$p
		done
		sleep 0.1; i=$((i + 1))
	done
	sleep 1 # its own sandbox made (pivot_root into the share)
	got=$([ -n "$fsd" ] && "$LOCK" "$fsd" /secrets /config / 2>&1 | tr '\n' ';')
	check_eq "the rules' mounts and a read-only share are locked in virtiofsd's namespace (no unmount, no remount writable)" \
		"/secrets remount EPERM umount EINVAL;/config remount EPERM umount EINVAL;/ remount EPERM umount EINVAL;" "$got"
	wait $lpid
	check_eq "... a rule's missing path in a read-only share: made for the session, gone after" \
		"0 absent" "$? $([ -e "$W/later2" ] && echo present || echo absent)"
fi

# --- credential files in a checkout -------------------------------------------------------
unset https_proxy HTTPS_PROXY http_proxy HTTP_PROXY ALL_PROXY all_proxy no_proxy NO_PROXY
export HOME="$TMP" GIT_CONFIG_GLOBAL=/dev/null GIT_CONFIG_NOSYSTEM=1 GIT_TERMINAL_PROMPT=0
export GIT_AUTHOR_NAME=host GIT_AUTHOR_EMAIL=host@example.com GIT_COMMITTER_NAME=host \
	GIT_COMMITTER_EMAIL=host@example.com
GIT_TOKEN='ghx-REMOTETOKEN-71c3d0a9e5'
if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
mkdir -p "$TMP/root"
git init -q -b main "$TMP/src"
echo 'first' > "$TMP/src/README"
git -C "$TMP/src" add README && git -C "$TMP/src" commit -q -m first
git clone -q --bare "$TMP/src" "$TMP/root/repo.git"
"$GITSRV" --cert "$TMP/up.pem" --key "$TMP/up.key" --root "$TMP/root" \
	--auth "Basic $(printf 'x-access-token:%s' "$GIT_TOKEN" | base64 -w0)" \
	--log "$TMP/git.log" > "$TMP/git.port" 2> "$TMP/git.err" &
pids="$pids $!"
i=0; while [ ! -s "$TMP/git.port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
GPORT=$(cat "$TMP/git.port")
C=$TMP/co
git clone -q "$TMP/src" "$C"
git -C "$C" remote set-url origin "https://x-access-token:$GIT_TOKEN@localhost:$GPORT/repo.git"
mkdir -p "$C/.aws" "$C/deploy"
printf 'OPENAI_API_KEY=sk-live-ENVSECRET1x\n' > "$C/.env"
printf '//registry.npmjs.org/:_authToken=npm_NPMSECRET2x\n' > "$C/.npmrc"
printf '[default]\naws_secret_access_key = AWSSECRET6x\n' > "$C/.aws/credentials"
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nKEYSECRET8x\n-----END OPENSSH PRIVATE KEY-----\n' \
	> "$C/deploy/id_ed25519"
secrets_re='ENVSECRET1x|NPMSECRET2x|AWSSECRET6x|KEYSECRET8x|REMOTETOKEN'
run_capture run --work "$C" -- true
if [ "$rc" = 125 ] && grep -q '\.env (a \.env with values)' "$TMP/err" &&
	grep -q '\.npmrc (an npm token)' "$TMP/err" && grep -q '\.aws/credentials (AWS keys)' "$TMP/err" &&
	grep -q 'deploy/id_ed25519 (a private key)' "$TMP/err" &&
	grep -qF "git remote set-url origin https://localhost:$GPORT/repo.git" "$TMP/err" &&
	! grep -qE "$secrets_re" "$TMP/err"; then
	ok "a checkout with credential files is refused (125), each named with why, the remote with its fix"
else
	not_ok "a checkout with credential files is refused" "rc=$rc" "$(cat "$TMP/err")"
fi

"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
printf '%s' "$GIT_TOKEN" | "$BULKHEAD" vault put git --vault "$TMP/vault" > /dev/null 2>&1
cat > "$TMP/scope.json" << SCOPE
{ "secrets": [ { "name": "git", "inject": { "basic": "x-access-token" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $GPORT,
                        "path_prefix": "/repo.git/", "allow_addresses": ["127.0.0.1"] } ] } ] }
SCOPE
cat > "$TMP/job2.sh" << 'JOB'
cd /work
# [x], [N]: the patterns match no text of this script's (in the share, and in RAM once read).
echo "grep|$(grep -ralE 'ENVSECRET1[x]|NPMSECRET2[x]|AWSSECRET6[x]|KEYSECRET8[x]|REMOTETOKE[N]' /work 2>/dev/null | tr '\n' ' ')"
echo "sizes|$(wc -c < .env) $(wc -c < .npmrc) $(wc -c < .aws/credentials) $(wc -c < deploy/id_ed25519)"
echo "remote|$(git remote get-url origin)"
echo 'from the guest' > guest.txt && git add guest.txt &&
	git -c user.name=guest -c user.email=guest@example.com commit -q -m guest-commit-share
git push origin HEAD:main; echo "push=$?"
JOB
cp "$TMP/job2.sh" "$C/job2.sh"
run_capture run --mem 256 --ram-file "$TMP/guest.ram" --work "$C" --share-secrets hide \
	--scope "$TMP/scope.json" --vault "$TMP/vault" --ca-file "$TMP/ca.pem" \
	--audit "$TMP/audit.log" -- sh job2.sh
check_eq "--share-secrets hide: the session runs (exit 0)" 0 "$rc"
if grep -q 'credential files hidden from the guest' "$TMP/err"; then
	ok "the launcher says it hid them"
else
	not_ok "the launcher says it hid them" "$(cat "$TMP/err")"
fi
check_eq "the guest's whole share holds none of their bytes" "grep|" "$(grep -a '^grep|' "$TMP/out")"
check_eq "... each is an empty file there" "sizes|0 0 0 0" "$(grep -a '^sizes|' "$TMP/out")"
check_eq "its .git/config has the remote without the token" \
	"remote|https://localhost:$GPORT/repo.git" "$(grep -a '^remote|' "$TMP/out")"
if grep -qx 'push=0' "$TMP/out" &&
	[ "$(git --git-dir="$TMP/root/repo.git" log -1 --format=%s main)" = guest-commit-share ]; then
	ok "git push through the broker, the scope's credential injected, moves the server's branch"
else
	not_ok "git push from a checkout with a cleaned remote" "$(tail -c 600 "$TMP/err")" \
		"$(cat "$TMP/git.log")"
fi
if [ -s "$TMP/guest.ram" ] && grep -qaF 'guest-commit-share' "$TMP/guest.ram"; then
	if grep -qaE "$secrets_re" "$TMP/guest.ram"; then
		not_ok "none of the credentials anywhere in the guest's RAM"
	else
		ok "none of the credentials anywhere in the $(($(stat -c %s "$TMP/guest.ram") >> 20)) MiB of guest RAM (which holds the commit it made)"
	fi
else
	not_ok "the guest's RAM was kept and holds what the guest did" "$(ls -la "$TMP/guest.ram" 2>&1)"
fi
if grep -qF "x-access-token:$GIT_TOKEN@" "$C/.git/config" && grep -q ENVSECRET1x "$C/.env"; then
	ok "the host's checkout is as it was: its remote and files untouched"
else
	not_ok "the host's checkout is untouched" "$(cat "$C/.git/config")"
fi
# A share its scan cannot look through (here deeper than its 32 levels, as a guest can make
# its share for the next session) is not given: the session does not start, saying where.
DEEP=$TMP/deep
mkdir -p "$DEEP/$(seq -s / 1 34 | sed 's/[0-9]*/d&/g')"
run_capture run --work "$DEEP" -- true
if [ "$rc" = 125 ] && grep -q 'the scan for credential files stopped early (.*deeper than its bound' "$TMP/err"; then
	ok "a share the scan could not look through is refused, naming where it stopped"
else
	not_ok "a share the scan stopped in" "rc=$rc" "$(head -c 600 "$TMP/err")"
fi
plan_done
