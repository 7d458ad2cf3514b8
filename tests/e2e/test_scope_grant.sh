#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# What a scope grants besides network rules (broker/rules_grant.c, session/plan_scope.c): its work
# share (the session's /work, which --work may repeat or narrow to read-only, never change or
# widen; the global policy's deny_share_paths applies) and its expiry (no start after it, the
# session stopped when it comes). Malformed grants are clear errors with line and column.
. "$(dirname "$0")/lib.sh"

export BULKHEAD_RUNDIR="$TMP/run"
mkdir -p "$TMP/w" "$TMP/other" && echo granted > "$TMP/w/f"
scope() { printf '%s\n' "$1" > "$TMP/scope.json"; }

scope "{ \"allow\": [], \"work\": { \"path\": \"$TMP/w\", \"read_only\": true } }"
run_capture run --scope "$TMP/scope.json" -- sh -c 'cat /work/f; touch /work/x 2> /dev/null && echo wrote; true'
check_eq "the scope's work share is the session's /work, read-only as granted" "0 granted" "$rc $(cat "$TMP/out")"
check_eq "... and the guest wrote nothing there" "f" "$(ls "$TMP/w")"
run_capture run --scope "$TMP/scope.json" --work "$TMP/w:ro" -- cat /work/f
check_eq "--work may repeat the grant" "0 granted" "$rc $(cat "$TMP/out")"
run_capture run --scope "$TMP/scope.json" --work "$TMP/other" -- true
check_eq "--work may not name another directory" \
	"125 bulkhead: --work $TMP/other: the scope grants $TMP/w, and no other directory" "$rc $(cat "$TMP/err")"
run_capture run --scope "$TMP/scope.json" --work "$TMP/w:rw" -- true
check_eq "--work may not widen a read-only grant" \
	"125 bulkhead: --work $TMP/w:rw: the scope grants it read-only" "$rc $(cat "$TMP/err")"
scope "{ \"work\": { \"path\": \"$TMP/w\" } }"
run_capture run --scope "$TMP/scope.json" --work "$TMP/w:ro" -- sh -c 'touch /work/y 2> /dev/null && echo wrote'
check_eq "--work may narrow a writable grant to read-only" "1 " "$rc $(cat "$TMP/out")"
printf '{ "deny_share_paths": ["%s"] }\n' "$TMP/w" > "$TMP/policy.json"
run_capture run --policy "$TMP/policy.json" --scope "$TMP/scope.json" -- true
if [ "$rc" = 125 ] && grep -q "deny_share_paths" "$TMP/err"; then
	ok "the global policy refuses a scope's share it forbids: $(cat "$TMP/err")"
else
	not_ok "policy over the scope's share" "rc=$rc" "$(cat "$TMP/err")"
fi

"$BULKHEAD" policy explain --policy "$TMP/policy.json" --scope "$TMP/scope.json" GET https://example.com/ \
	> "$TMP/out" 2>&1
grep -q "^note: *no session starts with this scope: the scope shares $TMP/w, which the global policy forbids" \
	"$TMP/out" && ok "policy explain says so too" || not_ok "policy explain and the scope's share" "$(cat "$TMP/out")"

# --- expiry ----------------------------------------------------------------------------------
scope '{ "allow": [], "expires_at": "2020-01-01T00:00:00Z" }'
run_capture run --scope "$TMP/scope.json" -- true
check_eq "an expired scope starts nothing" \
	"125 bulkhead: --scope $TMP/scope.json: expired at 2020-01-01T00:00:00Z" "$rc $(cat "$TMP/err")"
check_eq "... and leaves nothing behind" "" "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
soon=$(date -u -d '+4 seconds' +%Y-%m-%dT%H:%M:%SZ)
scope "{ \"allow\": [], \"expires_at\": \"$soon\" }"
start=$(date +%s)
run_capture run --scope "$TMP/scope.json" --timeout 60 -- sleep 30
took=$(( $(date +%s) - start ))
if [ "$rc" = 124 ] && [ "$(cat "$TMP/err")" = "bulkhead: the scope expired ($soon); the VM was stopped" ] &&
	[ "$took" -lt 20 ]; then
	ok "the session stops when its scope expires, before a longer --timeout ($took s): $(cat "$TMP/err")"
else
	not_ok "the scope's expiry stops the session" "rc=$rc took=$took" "$(cat "$TMP/err")"
fi
later=$(date -u -d '+1 hour' +%Y-%m-%dT%H:%M:%SZ)
scope "{ \"allow\": [], \"expires_at\": \"$later\" }"
run_capture run --scope "$TMP/scope.json" --timeout 2 -- sleep 30
check_eq "a shorter --timeout still ends it first, as a timeout" \
	"124 bulkhead: timed out after 2 s; the VM was stopped" "$rc $(cat "$TMP/err")"

# --- malformed grants: one line with where --------------------------------------------------
check() { # NAME JSON EXPECTED-OUTPUT-AFTER-PATH
	printf '%s\n' "$2" > "$TMP/bad.json"
	check_eq "$1" "$TMP/bad.json: $3" "$("$BULKHEAD" policy check "$TMP/bad.json")"
}
check "31 February is not a date" '{ "expires_at": "2026-02-31T00:00:00Z" }' \
	'line 1, column 17: expires_at: want a UTC time like "2026-12-01T18:00:00Z"'
check "an offset other than Z is refused" '{ "expires_at": "2026-12-01T18:00:00+01:00" }' \
	'line 1, column 17: expires_at: want a UTC time like "2026-12-01T18:00:00Z"'
check "a number is not a time" '{ "expires_at": 1798000000 }' \
	'line 1, column 17: expires_at: want a UTC time like "2026-12-01T18:00:00Z"'
check "a relative work path is refused" '{ "work": { "path": "src" } }' \
	"line 1, column 11: work: \"path\" must be an absolute path without ':'"
check "an unknown key in work is refused" '{ "work": { "path": "/src", "mode": "ro" } }' \
	'line 1, column 11: work: unknown key "mode"'
check "a valid grant is summed up" '{ "work": { "path": "/src", "read_only": true }, "expires_at": "2026-12-01T18:00:00Z" }' \
	'ok (scope: 0 secrets, 0 allowed destinations, work /src read-only, expires 2026-12-01T18:00:00Z)'
plan_done
