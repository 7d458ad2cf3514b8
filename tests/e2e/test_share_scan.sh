#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_share_scan.sh: what a session sharing a directory would get, through
# `bulkhead policy share` (nothing started; the same decision `run` makes: session/share_plan.h).
# A checkout with each kind of credential file is refused, every file named with why and a
# tokenized remote with the git command that cleans it; hidden with --share-secrets hide;
# allowed by name; the global policy forcing hide, refusing exceptions and adding patterns;
# --work-rule narrowing the scope's rules but never widening them; hostile rule names
# (newline, too long, not UTF-8, "..", absolute) and broken scope keys refused with a clear
# error; a share of 200,000 files scanned within its bounds, saying where it stopped.
. "$(dirname "$0")/lib.sh"

require "policy share" "$BULKHEAD"
D=$TMP/co
mkdir -p "$D/.aws" "$D/.docker" "$D/deploy" "$D/.git" "$D/src" "$D/config"
printf 'OPENAI_API_KEY=sk-live-ENVSECRET1\n' > "$D/.env"
printf '//registry.npmjs.org/:_authToken=npm_NPMSECRET2\n' > "$D/.npmrc"
printf '[pypi]\nusername = __token__\npassword = pypi-PYPISECRET3\n' > "$D/.pypirc"
printf 'machine example.com login alice password NETRCSECRET4\n' > "$D/.netrc"
printf 'https://alice:GITCREDSECRET5@github.com\n' > "$D/.git-credentials"
printf '[default]\naws_secret_access_key = AWSSECRET6\n' > "$D/.aws/credentials"
printf '{"auths": {"ghcr.io": {"auth": "RE9DS0VSU0VDUkVUNw=="}}}\n' > "$D/.docker/config.json"
printf -- '-----BEGIN OPENSSH PRIVATE KEY-----\nKEYSECRET8\n-----END OPENSSH PRIVATE KEY-----\n' \
	> "$D/deploy/id_ed25519"
printf '{"type": "service_account", "private_key": "-----BEGIN PRIVATE KEY-----\\nSASECRET9\\n-----END PRIVATE KEY-----\\n"}\n' \
	> "$D/sa.json"
printf '[core]\n\tbare = false\n[remote "origin"]\n\turl = https://x-access-token:GITTOKEN10@example.com/o/r.git\n' \
	> "$D/.git/config"
printf 'OPENAI_API_KEY=\n' > "$D/.env.example"
printf 'print("hi")\n' > "$D/src/app.py"

share() { "$BULKHEAD" policy share "$@" > "$TMP/out" 2> "$TMP/err"; rc=$?; }
# field KEY: the JSON answer's top-level KEY.
field() { python3 -c 'import json,sys; v=json.load(open(sys.argv[1]))[sys.argv[2]]; print(json.dumps(v) if not isinstance(v, str) else v)' "$TMP/out" "$1"; }
fates() { python3 -c 'import json,sys; print(" ".join(sorted(f["path"]+"="+f["fate"] for f in json.load(open(sys.argv[1]))["found"])))' "$TMP/out"; }

all=".aws/credentials .docker/config.json .env .git-credentials .git/config .netrc .npmrc .pypirc deploy/id_ed25519 sa.json"
share "$D"
check_eq "a checkout with ten kinds of credential file: refused (exit 1)" 1 "$rc"
missing=
for f in $all; do grep -qF "$f (" "$TMP/out" || missing="$missing $f"; done
check_eq "the refusal names each of them, with why" "" "$missing"
if grep -qF 'git remote set-url origin https://example.com/o/r.git' "$TMP/out" &&
	grep -q 'found:    .git/config: a git remote or header with a credential: refused' "$TMP/out"; then
	ok "a tokenized remote is named with the command that cleans it"
else
	not_ok "a tokenized remote is named with the command that cleans it" "$(cat "$TMP/out")"
fi
if grep -q 'env.example\|src/app.py' "$TMP/out"; then
	not_ok "look-alikes (.env.example) and ordinary files are not named" "$(cat "$TMP/out")"
else
	ok "look-alikes (.env.example) and ordinary files are not named"
fi
if grep -qE 'ENVSECRET|NPMSECRET|PYPISECRET|NETRCSECRET|GITCREDSECRET|AWSSECRET|KEYSECRET|SASECRET|GITTOKEN' "$TMP/out" "$TMP/err"; then
	not_ok "no credential's value appears in what is said about it"
else
	ok "no credential's value appears in what is said about it"
fi

share --json --share-secrets hide "$D"
check_eq "--share-secrets hide: the session would start" "0 start" "$rc $(field decision)"
want=$(for f in $all; do [ "$f" = .git/config ] && echo "$f=cleaned" || echo "$f=hidden"; done | sort | tr '\n' ' ' | sed 's/ $//')
check_eq "--share-secrets hide: each hidden, the git config cleaned" "$want" "$(fates)"
share --json --share-secrets hide --share-allow deploy "$D"
check_eq "--share-allow deploy: the key under it is shared as it is" "deploy/id_ed25519=allowed" \
	"$(fates | tr ' ' '\n' | grep deploy)"

# The global policy.
printf '{"share_secrets": "hide", "share_secrets_allow": false, "share_secret_patterns": ["*.kdbx", "src/*.py"]}\n' \
	> "$TMP/policy.json"
"$BULKHEAD" policy check "$TMP/policy.json" > /dev/null 2>&1
check_eq "policy check takes the share keys" 0 "$?"
share --json --policy "$TMP/policy.json" --share-secrets refuse "$D"
check_eq "the policy's hide beats the session's refuse" "0 start the global policy" \
	"$rc $(field decision) $(field secrets_by)"
check_eq "the policy's patterns count (src/*.py from the top)" "src/app.py=hidden" \
	"$(fates | tr ' ' '\n' | grep app.py)"
share --policy "$TMP/policy.json" --share-allow .env "$D"
if [ "$rc" = 125 ] && grep -q 'share_secrets_allow: false' "$TMP/err"; then
	ok "a session's exception is refused when the policy forbids them"
else
	not_ok "a session's exception is refused when the policy forbids them" "rc=$rc" "$(cat "$TMP/err")"
fi
printf '{"share_secrets": "maybe"}\n' > "$TMP/bad-policy.json"
"$BULKHEAD" policy check "$TMP/bad-policy.json" > "$TMP/out" 2>&1
if grep -q 'line 1, column .*share_secrets.*"refuse" or "hide"' "$TMP/out"; then
	ok "a bad share_secrets in the policy: named with line and column"
else
	not_ok "a bad share_secrets in the policy" "$(cat "$TMP/out")"
fi

# Rules: the scope's and the session's.
E=$TMP/plain
mkdir -p "$E/src" "$E/config"
printf '{"work": {"paths": {"src": "rw", "config": "ro", "secrets": "hidden"}, "share_secrets": "hide"}}\n' \
	> "$TMP/scope.json"
"$BULKHEAD" policy check "$TMP/scope.json" > /dev/null 2>&1
check_eq "the README's scope (src rw, config ro, secrets hidden) passes policy check" 0 "$?"
share --json --scope "$TMP/scope.json" --work-rule config/local:hidden "$E"
rules=$(python3 -c 'import json,sys; print(" ".join(r["path"]+":"+r["mode"]+(":missing" if r["missing"] else "") for r in json.load(open(sys.argv[1]))["rules"]))' "$TMP/out")
check_eq "the scope's rules and a narrower --work-rule, shallowest first; missing paths said" \
	"config:ro secrets:hidden:missing src:rw config/local:hidden:missing" "$rules"
share --scope "$TMP/scope.json" --work-rule config:rw "$E"
if [ "$rc" = 125 ] && grep -q 'the scope makes config ro; a session may narrow its scope, never widen it' "$TMP/err"; then
	ok "--work-rule may not widen the scope's rule"
else
	not_ok "--work-rule may not widen the scope's rule" "rc=$rc" "$(cat "$TMP/err")"
fi
share --scope "$TMP/scope.json" --work-rule config/x:rw "$E"
check_eq "... nor a deeper path under it" 125 "$rc"
ln -s /etc "$E/link"
share --work-rule link/passwd:ro "$E"
if [ "$rc" = 1 ] && grep -q 'symbolic link on its way' "$TMP/out"; then
	ok "a rule through a symbolic link is refused"
else
	not_ok "a rule through a symbolic link is refused" "rc=$rc" "$(cat "$TMP/out" "$TMP/err")"
fi
echo x > "$E/config/a"
ln "$E/config/a" "$E/src/a-link"
share --work-rule config:ro "$E"
if [ "$rc" = 1 ] && grep -q 'config/a has other names (hard links)' "$TMP/out"; then
	ok "a read-only path with a file linked from outside the rule is refused"
else
	not_ok "a read-only path with a hard-linked file" "rc=$rc" "$(cat "$TMP/out" "$TMP/err")"
fi
rm "$E/src/a-link"

# Hostile names in rules: a clear error each, as options and in a scope.
long=$(printf 'a%.0s' $(seq 1 300))
nl='a
b'
for spec in "$nl:ro" "$long:ro" "$(printf 'bad\377name'):ro" "../x:ro" "/etc:ro" "a//b:ro" "src:rwx" "a/./b:hidden"; do
	share --work-rule "$spec" "$E"
	if [ "$rc" = 125 ] && grep -q -e '--work-rule' "$TMP/err" && [ "$(wc -l < "$TMP/err")" -le 1 ]; then
		:
	else
		not_ok "a hostile --work-rule: a one-line error" "spec: $(printf '%s' "$spec" | od -An -c | tr -s ' ' | tr -d '\n' | head -c 80)" "rc=$rc" "$(cat "$TMP/err")"
		bad_rule=1
	fi
done
[ -z "${bad_rule:-}" ] && ok "hostile --work-rule paths (newline, 300 bytes, not UTF-8, .., absolute, //, a bad mode, .): one-line errors"
printf '{"work": {"paths": {"a\\nb": "ro"}}}\n' > "$TMP/s1.json"
printf '{"work": {"paths": {"../up": "ro"}}}\n' > "$TMP/s2.json"
printf '{"work": {"paths": {"src": "readonly"}}}\n' > "$TMP/s3.json"
printf '{"work": {"share_secrets_allow": ["/abs"]}}\n' > "$TMP/s4.json"
n=0
for s in 1 2 3 4; do
	"$BULKHEAD" policy check "$TMP/s$s.json" > "$TMP/out" 2>&1 && continue
	grep -q 'work: ' "$TMP/out" && n=$((n + 1))
done
check_eq "scopes with a hostile path, a bad mode or an absolute allow: each refused, naming work" 4 "$n"

# Hostile names in the share: found and said, quoted.
H=$TMP/hostile
mkdir -p "$H/$(printf 'dir\nwith\nnewlines')" "$H/$(printf 'bad\377')"
printf 'A=1\n' > "$H/$(printf 'dir\nwith\nnewlines')/.env"
printf 'A=1\n' > "$H/$(printf 'bad\377')/.env"
share "$H"
if [ "$rc" = 1 ] && grep -qF 'dir\x0awith\x0anewlines/.env' "$TMP/out" && grep -qF 'bad\xff/.env' "$TMP/out" &&
	[ "$(grep -c '^found:' "$TMP/out")" = 2 ]; then
	ok "credential files under hostile names: found, and named quoted on one line each"
else
	not_ok "credential files under hostile names" "rc=$rc" "$(cat "$TMP/out" "$TMP/err")"
fi

# 200,000 files: the scan stops at its bound, says so, and the share is not given (a guest can
# fill its share to make the next session's scan stop before a credential file); with the
# part that made it stop hidden by a rule, it is. In a tmpfs (/dev/shm): making them costs
# seconds there and minutes on a slow disk.
B=$(mktemp -d /dev/shm/bulkhead-scan.XXXXXX 2> /dev/null || mktemp -d "$TMP/big.XXXXXX")
trap 'for p in $pids; do kill "$p" 2> /dev/null; done; rm -rf "$TMP" "$B"' EXIT
i=0
while [ $i -lt 200 ]; do
	mkdir "$B/d$i"
	(cd "$B/d$i" && seq -f 'f%g' 1 1000 | xargs touch)
	i=$((i + 1))
done
t0=$(date +%s%N)
share --json "$B"
t1=$(date +%s%N)
if [ "$rc" = 1 ] && [ "$(field scan | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["complete"], s["entries"] <= 100001, "stopped after 100000 entries" in (s["stopped"] or ""))')" = "False True True" ] &&
	[ "$(field decision)" = refuse ] && field why | grep -q 'stopped early.*not given to the guest'; then
	ok "200,000 files: the scan stops after its 100,000-entry bound, says so, and the share is refused ($(( (t1 - t0) / 1000000 )) ms)"
else
	not_ok "200,000 files: the scan stays within its bounds" "rc=$rc" "$(head -c 600 "$TMP/out")"
fi
share "$B"
grep -q '^scan:     stopped early: it stopped after 100000 entries, its bound' "$TMP/out"
check_eq "... and the text says where it stopped" 0 "$?"
# 150,000 of them: 75,000 under big/ (hidden: not scanned; the rule's own check of big/ stays
# within its bound) and 75,000 beside it.
i=150
while [ $i -lt 200 ]; do rm -rf "$B/d$i"; i=$((i + 1)); done
mkdir "$B/big"
i=0
while [ $i -lt 75 ]; do mv "$B/d$i" "$B/big/"; i=$((i + 1)); done
printf 'K=V\n' > "$B/.env"
share "$B"
check_eq "150,000 files: refused too" 1 "$rc"
share --share-secrets hide --work-rule big:hidden "$B"
if [ "$rc" = 0 ] && grep -q '^scan:     complete' "$TMP/out" && grep -q '^found:    .env: .*: hidden' "$TMP/out"; then
	ok "... with that part hidden by a rule, the scan completes and the share is given"
else
	not_ok "... with that part hidden by a rule" "rc=$rc" "$(cat "$TMP/out")"
fi
# What a red-team round found (docs/THREAT-MODEL.md "The work share"), each kept found.
# found_in DIR PATH...: `policy share DIR` (refuse, the default) names each PATH as found.
found_in() {
	_d=$1; shift
	share --json "$_d"
	_got=$(python3 -c 'import json,sys; print(" ".join(sorted(f["path"] for f in json.load(open(sys.argv[1]))["found"])))' "$TMP/out")
	_want=$(printf '%s\n' "$@" | sort | tr '\n' ' ' | sed 's/ $//')
	[ "$rc" = 1 ] && [ "$_got" = "$_want" ]
}
R=$TMP/rt
mkdir -p "$R/inc/.git" "$R/wt/.git/worktrees/w1" "$R/bare/app.git" "$R/sep/gd" "$R/mods" \
	"$R/cont/.git" "$R/q/.git" "$R/big" "$R/lnk/real" "$R/bom" "$R/dock/.docker" "$R/awsc/.aws"
printf '[include]\n\tpath = ../creds.inc\n' > "$R/inc/.git/config"
printf '[remote "o"]\n\turl = https://u:INCSECRET@h/x\n' > "$R/inc/creds.inc"
printf '[core]\n\tbare = false\n' > "$R/wt/.git/config"
printf '[remote "o"]\n\turl = https://u:WTSECRET@h/x\n' > "$R/wt/.git/config.worktree"
printf 'ref: refs/heads/main\n' > "$R/wt/.git/worktrees/w1/HEAD"
printf '[remote "o"]\n\turl = https://u:WT1SECRET@h/x\n' > "$R/wt/.git/worktrees/w1/config.worktree"
printf '[remote "origin"]\n\turl = https://u:MIRRORSECRET@h/x\n\tmirror = true\n' > "$R/bare/app.git/config"
printf 'gitdir: gd\n' > "$R/sep/.git"
printf 'ref: refs/heads/main\n' > "$R/sep/gd/HEAD"
printf '[remote "origin"]\n\turl = https://u:SEPSECRET@h/x\n' > "$R/sep/gd/config"
printf '[submodule "m"]\n\turl = https://u:MODSECRET@h/m\n' > "$R/mods/.gitmodules"
printf '[http]\n\textraheader = \\\n\tAuthorization: Bearer CONTSECRET\n' > "$R/cont/.git/config"
printf '[remote "o"]\n\turl = https://h/x?access_token=QUERYSECRET\n' > "$R/q/.git/config"
{ head -c 70000 /dev/zero | tr '\0' '#'; printf '\nAPI_KEY=BIGSECRET\n'; } > "$R/big/.env"
printf 'API_KEY=LINKSECRET\n' > "$R/lnk/real/env.txt"
ln -s real/env.txt "$R/lnk/.env"
printf '\357\273\277API_KEY=BOMSECRET\n' > "$R/bom/.env"
printf '{"auths": {"r": {"username": "u", "password": "DOCKSECRET"}}}\n' > "$R/dock/.docker/config.json"
printf '[default]\naws_secret_access_key = AWSCONFSECRET\n' > "$R/awsc/.aws/config"
mkdir -p "$R/keys/.git" "$R/names/.config/git" "$R/dl/.docker" "$R/dl/real"
printf '[sendemail]\n\tsmtpPass = SMTPSECRET\n[github]\n\ttoken = GHSECRET\n' > "$R/keys/.git/config"
for n in .env~ prod.env .envrc; do printf 'export K=NAMESECRET\n' > "$R/names/$n"; done
printf '[credential]\n\thelper = "!f() { echo password=HELPERSECRET; }; f"\n' > "$R/names/.gitconfig"
printf '[remote "o"]\n\turl = https://u:XDGSECRET@h/x\n' > "$R/names/.config/git/config"
printf '{"auths": {"r": {"auth": "RExTRUNSRVQ="}}}\n' > "$R/dl/real/d.json"
ln -s ../real/d.json "$R/dl/.docker/config.json"
for c in "inc .git/config creds.inc" "keys .git/config" \
	"names .env~ prod.env .envrc .gitconfig .config/git/config" "dl .docker/config.json" "wt .git/config.worktree .git/worktrees/w1/config.worktree" \
	"bare app.git/config" "sep gd/config" "mods .gitmodules" "cont .git/config" \
	"q .git/config" "big .env" "lnk .env" "bom .env" "dock .docker/config.json" \
	"awsc .aws/config"; do
	# shellcheck disable=SC2086 # the case's directory and its paths
	set -- $c
	dir=$1; shift
	if found_in "$R/$dir" "$@"; then
		ok "found: $dir ($*)"
	else
		not_ok "not found: $dir ($*)" "rc=$rc" "$(head -c 800 "$TMP/out")"
	fi
done
share --share-secrets hide "$R/cont"
if grep -q 'found:    .git/config: a git config beyond a sure cleaning' "$TMP/out" &&
	grep -q '.git/config: .*: hidden' "$TMP/out"; then
	ok "a continued extraheader is hidden whole, not 'cleaned' with its token left behind"
else
	not_ok "a continued extraheader" "$(cat "$TMP/out")"
fi
mkdir -p "$R/qs/.git"
printf '[remote "origin"]\n\turl = https://user:QSSECRET1@github.com/x\n' > "$R/qs/.git/config"
share "$R/qs"
if grep -qF 'git remote set-url origin https://github.com/x)' "$TMP/out" && ! grep -q 'QSSECRET' "$TMP/out"; then
	ok "the set-url hint holds no credential"
else
	not_ok "the set-url hint" "$(cat "$TMP/out")"
fi
if grep -rqE 'INCSECRET|SMTPSECRET|GHSECRET|NAMESECRET|HELPERSECRET|XDGSECRET|WTSECRET|WT1SECRET|MIRRORSECRET|SEPSECRET|MODSECRET|CONTSECRET|QUERYSECRET|BIGSECRET|LINKSECRET|BOMSECRET|DOCKSECRET|AWSCONFSECRET' "$TMP/out" "$TMP/err"; then
	not_ok "no value of these appears in what is said"
else
	ok "no value of these appears in what is said"
fi
# A hidden directory with a visible path under it: what that path holds is found, under
# the policy's "no exceptions" too.
mkdir -p "$R/hv/secrets"
printf 'API_KEY=HVSECRET\n' > "$R/hv/secrets/.env"
printf '{"share_secrets": "hide", "share_secrets_allow": false}\n' > "$TMP/pol-hide.json"
share --json --policy "$TMP/pol-hide.json" --work-rule secrets:hidden --work-rule secrets/.env:ro "$R/hv"
fate=$(python3 -c 'import json,sys; print(" ".join(f["path"]+"="+f["fate"] for f in json.load(open(sys.argv[1]))["found"]))' "$TMP/out")
check_eq "a hidden directory's visible .env is found and hidden by the policy" "secrets/.env=hidden" "$fate"
share --json --work-rule secrets:hidden --work-rule secrets/.env:ro "$R/hv"
check_eq "... and refused by default" 1 "$rc"
share --json --work-rule secrets:hidden "$R/hv"
check_eq "a hidden directory alone: nothing in it counts (it is hidden)" 0 "$rc"
# Names from the share are quoted in text: a planted newline cannot start a line.
mkdir -p "$R/nl/$(printf 'a\nfound:    fake')"
printf 'K=V\n' > "$R/nl/$(printf 'a\nfound:    fake')/.env"
share "$R/nl"
if grep -q '^found:    a\\x0afound:    fake/.env' "$TMP/out" && ! grep -q '^found:    fake' "$TMP/out"; then
	ok "a name with a newline is shown quoted, on one line"
else
	not_ok "a name with a newline" "$(cat -v "$TMP/out")"
fi
# The policy's deny_share_paths and a scope's granted directory: said as a session says them.
mkdir -p "$R/plain"
printf '{"deny_share_paths": ["%s"]}\n' "$R/plain" > "$TMP/pol-deny.json"
share --policy "$TMP/pol-deny.json" "$R/plain"
if [ "$rc" = 1 ] && grep -q 'refused by the global policy (deny_share_paths' "$TMP/out"; then
	ok "a directory the policy denies: refuse, saying why"
else
	not_ok "a directory the policy denies" "rc=$rc" "$(cat "$TMP/out")"
fi
printf '{"work": {"path": "%s"}}\n' "$R/bom" > "$TMP/scope-other.json"
share --scope "$TMP/scope-other.json" "$R/plain"
if [ "$rc" = 1 ] && grep -q 'the scope grants .*, and no other directory' "$TMP/out"; then
	ok "a directory other than the scope's: refuse, saying why"
else
	not_ok "a directory other than the scope's" "rc=$rc" "$(cat "$TMP/out")" "$(cat "$TMP/err")"
fi
printf '{"share_secret_patterns": ["../x"]}\n' > "$TMP/pol-pat.json"
share --policy "$TMP/pol-pat.json" "$R/plain"
if [ "$rc" = 125 ] && grep -q 'share_secret_patterns' "$TMP/err"; then
	ok "a policy pattern that could never match ('../x') is refused"
else
	not_ok "a policy pattern '../x'" "rc=$rc" "$(cat "$TMP/err")"
fi
plan_done
