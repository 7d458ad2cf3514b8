#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: the guest's tools layer (initramfs/tools-layer.sh) — curl and git start
# with their libraries, git works as root in a repository and clones it through its
# helpers, the https helper loads, and the TLS paths lead to the session's CA bundle
# only, never the host's.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BIN/bulkhead-vsock" ]; then
	skip "guest tools suite" "bulkhead-vsock not built (run make)"; plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"

run_capture run -- curl --version
if [ "$rc" = 0 ] && head -n 1 "$TMP/out" | grep -qE '^curl .*(OpenSSL|GnuTLS|wolfSSL|mbedTLS)/'; then
	ok "curl --version runs and names its TLS library"
else
	not_ok "curl --version runs and names its TLS library" "rc=$rc" "$(head -c 400 "$TMP/out" "$TMP/err")"
fi

run_capture run -- git --version
case $rc:$(cat "$TMP/out") in
"0:git version "*) ok "git --version runs" ;;
*) not_ok "git --version runs" "rc=$rc" "$(head -c 400 "$TMP/out" "$TMP/err")" ;;
esac

# One session: a repository in /tmp, a commit by root (identity in /root/.gitconfig),
# and a local clone, which runs git-upload-pack from /usr/lib/git-core.
run_capture run -- sh -c 'set -e; cd /tmp
	git init -q repo; cd repo
	git config --global user.name "Guest Tester"
	git config --global user.email tester@example.invalid
	echo hello > hello.txt; git add hello.txt; git commit -q -m "first commit"
	git log --oneline; echo ---
	cd /tmp; git clone -q repo clone; cat clone/hello.txt; git -C clone log --oneline'
first=$(sed -n 1p "$TMP/out")
case $first in
[0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f][0-9a-f]*" first commit")
	ok "git init, commit as root and log in /tmp" ;;
*) not_ok "git init, commit as root and log in /tmp" "rc=$rc" "$(head -c 600 "$TMP/out" "$TMP/err")" ;;
esac
check_eq "git clone of a local repository has its file and commit" \
	"$(printf '%s\n---\nhello\n%s' "$first" "$first")" "$(cat "$TMP/out")"
if [ -s "$TMP/err" ]; then
	not_ok "git says nothing on stderr (templates, helpers, HOME present)" "$(head -c 600 "$TMP/err")"
else
	ok "git says nothing on stderr (templates, helpers, HOME present)"
fi

# The https helper and its libraries load: whatever the proxy answers, a failure is
# then reported by git-remote-https itself ("unable to access"), never "not a git
# command" or a loader error.
run_capture run -- git ls-remote https://example.invalid/repo.git
if [ "$rc" = 128 ] && grep -q "unable to access 'https://example.invalid/repo.git/'" "$TMP/err"; then
	ok "git-remote-https starts (a network failure, not a missing helper)"
else
	not_ok "git-remote-https starts (a network failure, not a missing helper)" "rc=$rc" "$(head -c 600 "$TMP/err")"
fi

# TLS layout: OpenSSL's default paths lead to /etc/ssl/certs, which holds at most the
# session's bundle, and no certificate file in the image is the host's bundle.
run_capture run -- sh -c 'echo "== certs"; ls -A /etc/ssl/certs || echo "(no /etc/ssl/certs)"
	echo "== links"; readlink /usr/lib/ssl/cert.pem; readlink /usr/lib/ssl/certs
	echo "== found"; find / -xdev -type f \( -name "*.crt" -o -name "*.pem" \) -exec sha256sum {} \;'
section() { awk -v s="$1" '/^== / { on = ($2 == s); next } on' "$TMP/out"; }
check_eq "OpenSSL's default CA paths point at /etc/ssl/certs" \
	"$(printf '/etc/ssl/certs/ca-certificates.crt\n/etc/ssl/certs')" "$(section links)"
certs=$(section certs)
case $rc:$certs in
0: | 0:ca-certificates.crt) ok "/etc/ssl/certs holds at most the session's ca-certificates.crt" ;;
*) not_ok "/etc/ssl/certs holds at most the session's ca-certificates.crt" "rc=$rc" "$certs" ;;
esac
found=$(section found)
host=
[ -f /etc/ssl/certs/ca-certificates.crt ] && host=$(sha256sum < /etc/ssl/certs/ca-certificates.crt | cut -c1-64)
bad=$(printf '%s\n' "$found" | grep -v '^$' | grep -v ' /etc/ssl/certs/ca-certificates.crt$' || true)
if [ -n "$host" ] && printf '%s\n' "$found" | grep -q "^$host "; then
	bad="$bad host bundle present"
fi
check_eq "no CA file but the session's, and not the host's bundle" "" "$bad"

# Guest RAM too small for the image: the kernel stops unpacking part-way and init says so,
# or the kernel runs out of memory first and bulkhead says so; either names --mem.
run_capture run --mem 64 -- true
if [ "$rc" = 125 ] && grep -q 'only partly unpacked.*--mem\|ran out of memory: give it more than --mem 64' "$TMP/err"; then
	ok "a guest too small for its image fails with a clear error: $(head -n 1 "$TMP/err")"
else
	not_ok "a guest too small for its image fails clearly" "rc=$rc" "$(head -c 400 "$TMP/err")"
fi

plan_done
