#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The watchdog of tests/nested/ (l1-run.sh, watchdog.sh), here on the host: a step that hangs
# is stopped after its budget with a report of its processes (state, kernel stack, last output)
# and counted as a failure, the steps after it still run, and a step that ends in time is
# reported as it is; a step failed by a guest the emulated SVM shut down (bulkhead-vmm's status
# 101) runs once more, and only its second run counts. (Inside L1 the same scripts run every
# suite.)
. "$(dirname "$0")/lib.sh"

top=$(cd "$(dirname "$0")/../.." && pwd)
mkdir -p "$TMP/t/tests/nested" "$TMP/t/tests/e2e"
cp "$top/tests/nested/l1-run.sh" "$top/tests/nested/watchdog.sh" "$TMP/t/tests/nested/"
printf 'echo "ok 1 - before the hang"\nsleep 3017 &\nwait\n' > "$TMP/t/tests/e2e/test_hangs.sh"
printf 'echo "ok 1 - fine"\necho "1..1"\nexit 0\n' > "$TMP/t/tests/e2e/test_fine.sh"
# Fails the first time with a session's guest shut down (and status 0, as most suites end
# whatever their checks said), passes the second.
cat > "$TMP/t/tests/e2e/test_shutdown_once.sh" << 'EOF2'
if [ -e "$TMPDIR/shutdown.seen" ]; then echo "ok 1 - the session ran"; exit 0; fi
: > "$TMP_MARK/shutdown.seen"
echo "not ok 1 - the session ran"
echo "# bulkhead: bulkhead-vmm failed (status 101): guest shut down (triple fault) on vCPU 0"
exit 0
EOF2
sed -i "s|\$TMP_MARK|$TMP|; s|\$TMPDIR|$TMP|" "$TMP/t/tests/e2e/test_shutdown_once.sh"
# Fails for another reason: not run again.
printf 'echo x >> "%s/other.runs"\necho "not ok 1 - wrong answer"\nexit 1\n' "$TMP" \
	> "$TMP/t/tests/e2e/test_other_fail.sh"
start=$(date +%s)
(cd "$TMP/t" && NESTED_BUDGET=3 timeout -s KILL 60 sh tests/nested/l1-run.sh test_hangs,test_fine,test_shutdown_once,test_other_fail) \
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
sed -n '/^begin test_shutdown_once$/,/^end test_shutdown_once /p' "$r" > "$TMP/once"
grep -q '^| # L1: running test_shutdown_once once more$' "$r" &&
	grep -q '^| # [0-9.]* not ok 1 - the session ran$' "$r" &&
	grep -q '^| [0-9.]* ok 1 - the session ran$' "$r" && ! grep -q '^| [0-9.]* not ok' "$TMP/once" &&
	grep -q '^end test_shutdown_once 0 ' "$r" &&
	ok "a step failed by a guest shutdown (status 101) runs once more; the second run counts" ||
	not_ok "a step failed by a guest shutdown runs once more" "$(cat "$r")"
grep -q '^end test_other_fail 1 ' "$r" && check_eq "a step failed otherwise runs once" 1 \
	"$(wc -l < "$TMP/other.runs")" || not_ok "a step failed otherwise ends with its status" "$(cat "$r")"
# (3017 s: a number of this suite's own, so that only its own step is looked for)
check_eq "nothing of the hung step is left" "" "$(pgrep -f 'sleep 3017' || true)"
plan_done
