#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite (unit, fuzz, end-to-end, nested), each of which prints TAP, and
# prints one summary line: "N passed, N failed, N skipped". Exit 1 on any failure.
# Usage: tests/run.sh [SUITE-NAME-PATTERN...]   (e.g. tests/run.sh e2e/run unit/)
# A suite runs when its name contains any of the patterns (all suites without one).
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
patterns=$*
logdir=$BUILD/test-logs
mkdir -p "$logdir"
pass=0 fail=0 skipped=0

run_suite() { # NAME CMD...
	name=$1; shift
	if [ -n "$patterns" ]; then
		match=
		for p in $patterns; do
			case $name in *"$p"*) match=1 ;; esac
		done
		[ -n "$match" ] || return
	fi
	log=$logdir/$(echo "$name" | tr / _).tap
	echo "== $name"
	start=$(date +%s)
	"$@" > "$log" 2>&1
	rc=$?
	# Show failures and skips with their reasons; keep passes to one line each.
	grep -E '^(not ok|ok .*# SKIP)|^#' "$log" | sed 's/^/   /'
	# A skip is "ok ... # SKIP" (our shell suites) or "not ok N # SKIP" (cmocka's skip()).
	p=$(grep -E '^ok ' "$log" | grep -vc '# SKIP')
	s=$(grep -cE '^(not )?ok .*# SKIP' "$log")
	f=$(grep -E '^not ok ' "$log" | grep -vc '# SKIP')
	if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then
		echo "   not ok - $name exited with status $rc without reporting a failure:"
		tail -n 5 "$log" | sed 's/^/   # /'
		f=1
	fi
	if [ $((p + s + f)) -eq 0 ]; then
		echo "   not ok - $name ran no test"
		f=1
	fi
	echo "   $p passed, $f failed, $s skipped ($(( $(date +%s) - start )) s; log: $log)"
	pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + s))
}

for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] || continue
	run_suite "unit/$(basename "$t")" env CMOCKA_MESSAGE_OUTPUT=TAP "$t"
done
for f in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$f" ] || continue
	run_suite "fuzz/$(basename "$f")" sh tests/fuzz/run-one.sh "$f" "${FUZZ_SECONDS:-15}"
done
for t in tests/e2e/test_*.sh; do
	run_suite "e2e/$(basename "$t" .sh)" sh "$t"
done
# bulkhead-vmm on a KVM host with hardware semantics, made inside QEMU TCG (tests/nested/).
run_suite nested/l1 sh tests/nested/run.sh

echo
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
