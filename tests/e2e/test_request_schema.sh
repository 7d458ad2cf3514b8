#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# One request schema (session/request_fields.h): docs/openapi.json, docs/API.md and
# `bulkhead run --help` agree with the table every caller parses with, and the CLI and the
# API refuse a value outside a field's bounds the same way. The check is also shown to catch
# a document that drifts, on copies changed here.
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
check=tests/tools/request_schema_check.py
"$BUILD/tests/request-schema" > "$TMP/table.json"
"$BULKHEAD" run --help > "$TMP/help.txt"
"$BULKHEAD" start --help > "$TMP/start-help.txt"

if out=$(python3 "$check" "$TMP/table.json" docs/openapi.json docs/API.md "$TMP/help.txt"); then
	ok "openapi.json, API.md and run --help agree with the request's table"
else
	not_ok "the documents and the request's table disagree" "$out"
fi
if out=$(python3 "$check" "$TMP/table.json" docs/openapi.json docs/API.md "$TMP/start-help.txt"); then
	ok "start --help shows every option of the table too"
else
	not_ok "start --help and the table disagree" "$out"
fi

# Drifted copies: each must be named.
python3 - "$TMP" << 'PY'
import json, sys
d = sys.argv[1]
o = json.load(open("docs/openapi.json"))
props = o["components"]["schemas"]["SessionCreate"]["properties"]
props["cpus"]["maximum"] = 64
props["disk_mib"] = {"type": "integer"}
json.dump(o, open(d + "/openapi-drift.json", "w"))
open(d + "/API-drift.md", "w").write(open("docs/API.md").read().replace("`mem_limit_mib` (64..1048576)", "`mem_limit_mib` (64..4194304)"))
PY
grep -v -- '--share-allow' "$TMP/help.txt" > "$TMP/help-drift.txt"
out=$(python3 "$check" "$TMP/table.json" "$TMP/openapi-drift.json" "$TMP/API-drift.md" "$TMP/help-drift.txt")
rc=$?
for want in "cpus: openapi.json says" "disk_mib: in openapi.json's SessionCreate but not a field" \
	"mem_limit_mib: docs/API.md does not say" "--share-allow: not in"; do
	if [ $rc -ne 0 ] && printf '%s\n' "$out" | grep -qF -- "$want"; then
		ok "a drifted document is caught: $want"
	else
		not_ok "a drifted document is not caught: $want" "exit $rc" "$out"
	fi
done

# The CLI takes its bounds from the table: the largest memory limit the API takes is taken,
# one more is refused with the bound named (before any session starts).
max=$(python3 -c 'import json,sys; print([int(f["max"]) for f in json.load(open(sys.argv[1])) if f["key"] == "mem_limit_mib"][0])' "$TMP/table.json")
"$BULKHEAD" run --mem-limit $((max + 1)) -- true 2> "$TMP/err"
rc=$?
if [ $rc -eq 125 ] && grep -q -- "--mem-limit '$((max + 1))': expected MIB, 64 to $max" "$TMP/err"; then
	ok "run --mem-limit above the table's bound is refused, naming it"
else
	not_ok "run --mem-limit above the bound" "exit $rc" "$(cat "$TMP/err")"
fi
for bad in "--mem 63" "--mem 0x40" "--mem 1e2" "--cpus -1" "--timeout 0" "--timeout nan" \
	"--share-secrets hid" "--boot-timeout 86401"; do
	# shellcheck disable=SC2086 # the option and its value are two words
	"$BULKHEAD" run $bad -- true 2> "$TMP/err"
	rc=$?
	if [ $rc -eq 125 ] && grep -q "expected" "$TMP/err"; then
		ok "run $bad is refused with what the option takes"
	else
		not_ok "run $bad" "exit $rc" "$(cat "$TMP/err")"
	fi
done
"$BULKHEAD" start --json --mem 2> "$TMP/err"
if grep -q "option '--mem' needs a value" "$TMP/err"; then
	ok "an option without its value is said so, not called unknown"
else
	not_ok "an option without its value" "$(cat "$TMP/err")"
fi

# --request: the API's JSON body, checked by the same table before anything starts (the
# daemon hands its supervisors their requests this way: test_serve.sh boots with them).
for case in '{"mem_mib": 70000}|"mem_mib": expected MIB, 64 to' '{"pool": true}|unknown field "pool"' \
	'{"work": "rel"}|"work" must be an absolute path' '{"cpus": 1, "cpus": 2}|duplicate' \
	'{"work_rules": ["a:ro"]}|"work_rules" must be an object' 'not json|not JSON'; do
	body=${case%%|*} want=${case#*|}
	printf '%s' "$body" | "$BULKHEAD" start --request - 2> "$TMP/err"
	rc=$?
	if [ $rc -eq 125 ] && grep -qF -- "$want" "$TMP/err"; then
		ok "start --request $body is refused: $want"
	else
		not_ok "start --request $body" "exit $rc" "$(cat "$TMP/err")"
	fi
done
"$BULKHEAD" start --request "$TMP/none.json" 2> "$TMP/err"
if grep -q "none.json: No such file" "$TMP/err"; then
	ok "start --request with no such file names it"
else
	not_ok "start --request with no such file" "$(cat "$TMP/err")"
fi
plan_done
