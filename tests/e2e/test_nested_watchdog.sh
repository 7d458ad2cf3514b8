#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The watchdog of tests/nested/ (l1-run.sh, watchdog.sh), here on the host: a step that hangs
# is stopped after its budget with a report of its processes (state, kernel stack, last output)
# and counted as a failure, the steps after it still run, and a step that ends in time is
# reported as it is. (Inside L1 the same scripts run every suite.)
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$TMP/t/tests/nested" "$TMP/t/tests/e2e"
cp "$top/tests/nested/l1-run.sh" "$top/tests/nested/watchdog.sh" "$TMP/t/tests/nested/"
printf 'echo "ok 1 - before the hang"\nsleep 3017 &\nwait\n' > "$TMP/t/tests/e2e/test_hangs.sh"
printf 'echo "ok 1 - fine"\necho "1..1"\nexit 0\n' > "$TMP/t/tests/e2e/test_fine.sh"
start=$(date +%s)
(cd "$TMP/t" && NESTED_BUDGET=3 timeout -s KILL 60 sh tests/nested/l1-run.sh test_hangs,test_fine) \
	> "$TMP/report" 2> /dev/null
took=$(($(date +%s) - start))
r=$TMP/report
grep -q '^| [0-9.]* ok 1 - before the hang$' "$r" && ok "a hanging step's output so far is reported" ||
	not_ok "a hanging step's output so far is reported" "$(cat "$r")"
grep -q '^| not ok - test_hangs hung: stopped by its watchdog$' "$r" && ok "the hang is a failure" ||
	not_ok "the hang is a failure" "$(cat "$r")"
grep -q '^| # watchdog: still running after 3 s' "$r" &&
	grep -q '^| # process [0-9]* (sleep): sleep 3017' "$r" &&
	grep -q '^| # .*thread [0-9]* (sleep) S (sleeping)' "$r" &&
	grep -q '^| # last output lines:' "$r" &&
	ok "the watchdog shows each process of the step with its threads' state before the kill" ||
	not_ok "the watchdog shows the stuck processes" "$(cat "$r")"
grep -q '^end test_hangs 137 ' "$r" && ok "the killed step ends with status 137" ||
	not_ok "the killed step ends with status 137" "$(grep '^end' "$r")"
grep -q '^end test_fine 0 ' "$r" && grep -q '^| [0-9.]* ok 1 - fine$' "$r" && grep -q '^nested: done$' "$r" &&
	ok "the next step runs and the plan ends" || not_ok "the next step runs and the plan ends" "$(cat "$r")"
[ $took -lt 30 ] && ok "no stall: the whole plan took $took s with a 3 s budget" ||
	not_ok "no stall" "the plan took $took s"
# (3017 s: a number of this suite's own, so that only its own step is looked for)
check_eq "nothing of the hung step is left" "" "$(pgrep -f 'sleep 3017' || true)"
plan_done
