#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The global policy without a VM: `bulkhead policy check` and `policy explain` against golden
# outputs (tests/golden/policy/), and `bulkhead run` refusing, before any VM starts, what the
# policy forbids — each refusal naming the rule.
. "$(dirname "$0")/lib.sh"

G=$(cd "$(dirname "$0")/../golden/policy" && pwd)
export BULKHEAD_RUNDIR="$TMP/run"

# policy check: every file, one line each, errors with line and column.
(cd "$G" && for f in *.json; do "$BULKHEAD" policy check "$f"; done) > "$TMP/check.out" 2>&1
if diff -u "$G/check.out" "$TMP/check.out" > "$TMP/check.diff"; then
	ok "policy check: $(grep -c ': ok' "$G/check.out") good files pass, $(grep -c ': line' "$G/check.out") broken ones named with line and column"
else
	not_ok "policy check output matches tests/golden/policy/check.out" "$(cat "$TMP/check.diff")"
fi
(cd "$G" && "$BULKHEAD" policy check good-policy.json bad-key.json > /dev/null 2>&1)
check_eq "policy check exits 1 when any file is broken" 1 "$?"
(cd "$G" && "$BULKHEAD" policy check good-policy.json good-scope.json > /dev/null 2>&1)
check_eq "policy check exits 0 when all are good" 0 "$?"

# policy explain: the decision, the layer and the rule, for each case.
(cd "$G" && while read -r pol sc m u; do
	echo "\$ bulkhead policy explain --policy $pol --scope $sc $m $u"
	"$BULKHEAD" policy explain --policy "$pol" --scope "$sc" "$m" "$u"
done < explain.cases) > "$TMP/explain.out" 2>&1
if diff -u "$G/explain.out" "$TMP/explain.out" > "$TMP/explain.diff"; then
	ok "policy explain: $(grep -c '^\$' "$G/explain.out") cases match tests/golden/policy/explain.out"
else
	not_ok "policy explain output matches the golden file" "$(cat "$TMP/explain.diff")"
fi

# bulkhead run: refused before anything starts, naming the global rule.
refused() { # NAME PATTERN ARGS...
	name=$1 pat=$2
	shift 2
	"$BULKHEAD" run --policy "${POL:-$G/good-policy.json}" "$@" -- true > "$TMP/out" 2> "$TMP/err"
	rc=$?
	if [ $rc = 125 ] && grep -q -- "$pat" "$TMP/err" && [ -z "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)" ]; then
		ok "$name: $(head -n 1 "$TMP/err")"
	else
		not_ok "$name" "rc=$rc" "$(cat "$TMP/err")" "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
	fi
}
refused "a scope naming a secret the policy forbids" 'deny_secrets: "prod_\*"' \
	--scope "$G/forbidden-scope.json"
cat > "$TMP/corp-scope.json" << 'SCOPE'
{ "allow": [ { "scheme": "https", "host": "wiki.corp.example" } ] }
SCOPE
refused "a scope allowing a host the policy forbids" 'deny_hosts: "\*.corp.example"' \
	--scope "$TMP/corp-scope.json"
cat > "$TMP/meta-scope.json" << 'SCOPE'
{ "allow": [ { "scheme": "http", "host": "169.254.169.254", "allow_addresses": ["169.254.169.254"] } ] }
SCOPE
refused "a scope reaching into a network the policy forbids" 'deny_cidrs: "169.254.0.0/16"' \
	--scope "$TMP/meta-scope.json"
mkdir -p "$TMP/home/.ssh" "$TMP/home/project"
HOME=$TMP/home refused "sharing a directory that holds ~/.ssh" 'deny_share_paths: "~/.ssh"' \
	--work "$TMP/home"
HOME=$TMP/home refused "sharing ~/.ssh itself, read-only" 'deny_share_paths: "~/.ssh"' \
	--work "$TMP/home/.ssh:ro"
refused "sharing /etc" 'deny_share_paths: "/etc"' --work /etc
refused "sharing / (which holds /etc)" 'deny_share_paths' --work /
refused "more memory than the policy allows" 'limits.max_mem_mib' --mem 2048
refused "more vCPUs than the policy allows" 'limits.max_cpus' --cpus 4
refused "a longer session than the policy allows" 'limits.max_session_seconds' --timeout 7200
# One host, one spelling: a trailing dot or upper case does not slip a host past deny_hosts.
cat > "$TMP/dotted-scope.json" << 'SCOPE'
{ "secrets": [ { "name": "db", "inject": { "header": "Authorization", "value": "Bearer {}" },
                 "destinations": [ { "scheme": "https", "host": "DB.Corp.Example." } ] } ] }
SCOPE
refused "a scope naming DB.Corp.Example. (a trailing dot)" 'deny_hosts: "\*.corp.example"' \
	--scope "$TMP/dotted-scope.json"

# The host's files that decide what a session may do are never where its guest can reach
# them: a guest that rewrote a scope in its work share would give the next session that reads
# it (say) a secret's destination of its choosing. Judged by device and inode, so another path
# to the share counts too.
mkdir -p "$TMP/share/sub" "$TMP/alias"
echo '{ "allow": [] }' > "$TMP/share/sub/scope.json"
echo '{ "allow": [] }' > "$TMP/scope-out.json"
cp "$G/good-policy.json" "$TMP/share/policy.json"
: > "$TMP/share/ca.pem"
refused "a scope inside the writable work share" 'the scope (.*) is within reach of the writable share' \
	--work "$TMP/share" --scope "$TMP/share/sub/scope.json"
POL=$TMP/share/policy.json refused "the global policy inside the writable work share" \
	'the global policy (.*) is within reach of the writable share' --work "$TMP/share"
POL=
refused "the upstream CA bundle inside the writable work share" \
	'the upstream CA bundle (.*) is within reach of the writable share' --work "$TMP/share" \
	--scope "$TMP/scope-out.json" --ca-file "$TMP/share/ca.pem"
refused "the vault inside a read-only share" 'the vault (.*) is within reach of the share' \
	--work "$TMP/share:ro" --vault "$TMP/share/vault"
if [ "$(id -u)" = 0 ] && mount --bind "$TMP/share" "$TMP/alias" 2> /dev/null; then
	refused "a scope inside the work share by another path (a bind mount of it)" \
		'the scope (.*) is within reach of the writable share' --work "$TMP/share" \
		--scope "$TMP/alias/sub/scope.json"
	umount "$TMP/alias"
	# (found by a red-team round: walking up from a bind mount's root never meets the share)
	mount --bind "$TMP/share/sub" "$TMP/alias"
	refused "a scope in a bind mount of a directory inside the share" \
		'the scope (.*) is within reach of the writable share' --work "$TMP/share" \
		--scope "$TMP/alias/scope.json"
	umount "$TMP/alias"
	# A file outside bound onto a name inside the share: the guest writes it there.
	: > "$TMP/share/bound"
	mount --bind "$TMP/scope-out.json" "$TMP/share/bound"
	refused "a scope bind-mounted into the share" \
		'the scope (.*) is within reach of the writable share' --work "$TMP/share" \
		--scope "$TMP/scope-out.json"
	umount "$TMP/share/bound"
	rm -f "$TMP/share/bound"
else
	skip "a scope reached through a bind mount of the share" "needs root to bind-mount"
fi
# A hard link in the share is the same file: the guest rewrites it through that name.
mkdir -p "$TMP/trust"
echo '{ "allow": [] }' > "$TMP/trust/scope.json"
ln "$TMP/trust/scope.json" "$TMP/share/linked.json"
refused "a scope with a hard link on the share's file system" \
	'the scope (.*) is within reach of the writable share' --work "$TMP/share" \
	--scope "$TMP/trust/scope.json"
rm -f "$TMP/share/linked.json"
# A symbolic link on the scope's path (one an earlier session's guest could repoint) is
# refused, wherever it points.
ln -s "$TMP/trust" "$TMP/trust-link"
refused "a scope named through a symbolic link" 'the path goes through a symbolic link' \
	--scope "$TMP/trust-link/scope.json"
# A private broker's audit log goes to ${XDG_STATE_HOME:-~/.local/state}/bulkhead/audit: a
# share holding it (the home directory, say) would hand the guest its own record, even before
# the directory exists.
XDG_STATE_HOME=$TMP/share/state refused "the default audit log directory inside the share" \
	'the audit log directory (.*) is within reach of the share' --work "$TMP/share" \
	--scope "$TMP/trust/scope.json"
# The cache: paused sessions (other guests' memory) in no share at all; templates and images,
# which later sessions start from, in no share the guest may write. Refused before they exist.
BULKHEAD_CACHE=$TMP/share/cache refused "the paused sessions inside a read-only share" \
	"the paused sessions' directory (.*) is within reach of the share" --work "$TMP/share:ro"
XDG_CACHE_HOME=$TMP/share/xdg BULKHEAD_CACHE= refused "the default cache inside a writable share" \
	"the paused sessions' directory (.*) is within reach of the share" --work "$TMP/share"
mkdir -p "$TMP/cache2/templates"
BULKHEAD_CACHE=$TMP/cache2 refused "the template cache as the writable share" \
	'the template cache (.*) is within reach of the writable share' --work "$TMP/cache2/templates"
mkdir -p "$TMP/cache2/probe"
BULKHEAD_CACHE=$TMP/cache2 refused "the KVM probe's verdicts inside the writable share" \
	'the KVM probe cache (.*) is within reach of the writable share' --work "$TMP/cache2/probe"
# The scope is read once, through one descriptor, and the broker gets that text: a FIFO or
# a device is refused at once rather than read (or waited on) twice.
mkfifo "$TMP/fifo-scope"
timeout 20 "$BULKHEAD" run --scope "$TMP/fifo-scope" -- true > /dev/null 2> "$TMP/err"
rc=$?
if [ $rc = 125 ] && grep -q 'fifo-scope: not a regular file' "$TMP/err"; then
	ok "a scope that is a FIFO is refused at once: $(head -n 1 "$TMP/err")"
else
	not_ok "a scope that is a FIFO is refused at once" "rc=$rc" "$(cat "$TMP/err")"
fi
# Read-only, a scope may stay in the share: the guest reads it and cannot change it.
"$BULKHEAD" run --policy "$G/good-policy.json" --work "$TMP/share:ro" \
	--scope "$TMP/share/sub/scope.json" -- cat /work/sub/scope.json > "$TMP/out" 2> "$TMP/err"
rc=$?
if [ "$rc $(cat "$TMP/out")" = '0 { "allow": [] }' ]; then
	ok "a scope inside a read-only share is taken (the guest reads it, cannot change it)"
else
	not_ok "a scope inside a read-only share is taken" "rc=$rc" "$(cat "$TMP/out" "$TMP/err")"
fi

# The broker itself, with a real upstream on 127.0.0.1 that records every request: a policy
# denying 127.0.0.1 and localhost by name, scopes naming them in other spellings. Each scope
# is refused when the broker starts, and nothing reaches the upstream.
RECORD=$(cd "$(dirname "$0")/../tools" && pwd)/record_upstream.py
if command -v python3 > /dev/null; then
	python3 "$RECORD" "$TMP/up.log" > "$TMP/up.port" &
	up_pid=$!
	i=0
	while [ ! -s "$TMP/up.port" ] && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	UP=$(cat "$TMP/up.port")
	: > "$TMP/up.log"
	printf '{ "deny_hosts": ["127.0.0.1", "localhost"] }\n' > "$TMP/lo-policy.json"
	spelling() { # HOST URL-HOST ADDRESS
		printf '{ "allow": [ { "scheme": "http", "host": "%s", "port": %s, "allow_addresses": ["%s"] } ] }\n' \
			"$1" "$UP" "$3" > "$TMP/spell.json"
		rm -f "$TMP/b.sock"
		"$BIN/bulkhead-broker" --listen "$TMP/b.sock" --rules "$TMP/spell.json" \
			--policy "$TMP/lo-policy.json" 2> "$TMP/b.err" &
		b=$!
		wait_socket "$TMP/b.sock" 5 $b
		if [ -S "$TMP/b.sock" ]; then
			printf 'GET http://%s:%s/reached HTTP/1.1\r\nConnection: close\r\n\r\n' "$2" "$UP" |
				"$BUILD/tests/proxy-client" raw "$TMP/b.sock" > /dev/null 2>&1
			kill $b 2> /dev/null
		fi
		wait $b
		rc=$?
		if [ $rc = 1 ] && [ ! -s "$TMP/up.log" ] &&
			grep -q 'deny_hosts\|a\.b\.c\.d\|carries an IPv4' "$TMP/b.err"; then
			ok "a scope naming $1 for a denied 127.0.0.1: refused at start ($(cut -c1-110 "$TMP/b.err"))"
		else
			not_ok "a scope naming $1 is refused" "broker rc=$rc: $(cat "$TMP/b.err")" \
				"the upstream got: $(cat "$TMP/up.log")"
		fi
		: > "$TMP/up.log"
	}
	spelling localhost. localhost. 127.0.0.1
	spelling 127.0.0.1. 127.0.0.1 127.0.0.1
	spelling 2130706433 2130706433 127.0.0.1
	spelling 0x7f.0.0.1 0x7f.0.0.1 127.0.0.1
	spelling 0177.0.0.1 0177.0.0.1 127.0.0.1
	spelling 127.1 127.1 127.0.0.1
	spelling ::ffff:127.0.0.1 '[::ffff:127.0.0.1]' ::ffff:127.0.0.1
	kill $up_pid
else
	skip "the broker refuses other spellings of denied hosts" "python3 is missing"
fi

# deny_share_paths judges the directory, not its name: a bind mount of a forbidden
# directory elsewhere is still forbidden.
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$TMP/forbidden/inner" "$TMP/alias"
	printf '{ "deny_share_paths": ["%s"] }\n' "$TMP/forbidden" > "$TMP/share-policy.json"
	mount --bind "$TMP/forbidden" "$TMP/alias"
	"$BULKHEAD" run --policy "$TMP/share-policy.json" --work "$TMP/alias/inner:ro" -- true \
		> /dev/null 2> "$TMP/err" < /dev/null
	rc=$?
	umount "$TMP/alias"
	if [ $rc = 125 ] && grep -q "deny_share_paths" "$TMP/err"; then
		ok "a bind mount of a forbidden share path is still forbidden"
	else
		not_ok "a bind mount of a forbidden share path is still forbidden" "rc=$rc" "$(cat "$TMP/err")"
	fi
fi

# "~/" in deny_share_paths is also the share owner's home: root sharing another user's
# directory does not get past "~/.ssh" because its own HOME is elsewhere. Here the owner is
# root (home from the password database) and HOME points elsewhere.
owner_home=$(getent passwd 0 | cut -d: -f6)
if [ "$(id -u)" -eq 0 ] && [ -d "$owner_home" ] && [ "$owner_home" != / ]; then
	keys=bulkhead-policy-test-$$
	mkdir -p "$owner_home/$keys" "$TMP/elsewhere"
	printf '{ "deny_share_paths": ["~/%s"] }\n' "$keys" > "$TMP/home-policy.json"
	HOME=$TMP/elsewhere "$BULKHEAD" run --policy "$TMP/home-policy.json" --work "$owner_home/$keys" \
		-- true > /dev/null 2> "$TMP/err" < /dev/null
	rc=$?
	rmdir "$owner_home/$keys"
	if [ $rc = 125 ] && grep -q "deny_share_paths: \"~/$keys\"" "$TMP/err"; then
		ok "~/ in deny_share_paths is the share owner's home too, not only the caller's"
	else
		not_ok "~/ in deny_share_paths is the share owner's home too" "rc=$rc" "$(cat "$TMP/err")"
	fi
else
	skip "~/ as the share owner's home" "needs root and a home directory for uid 0"
fi

printf '{ "deny_hosts": [ "a.example" ], }\n' > "$TMP/broken.json"
"$BULKHEAD" run --policy "$TMP/broken.json" -- true > /dev/null 2> "$TMP/err"
rc=$?
if [ $rc = 125 ] && grep -q "broken.json: line 1, column" "$TMP/err"; then
	ok "a broken policy file stops the session with its line and column: $(cat "$TMP/err")"
else
	not_ok "broken policy refused" "rc=$rc" "$(cat "$TMP/err")"
fi
plan_done
