#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs every test suite (unit, fuzz, end-to-end, nested), each of which prints TAP, and
# prints one summary line: "N passed, N failed, N skipped". Exit 1 on any failure.
# Usage: tests/run.sh [SUITE-NAME-PATTERN...]   (e.g. tests/run.sh e2e/run unit/)
# A suite runs when its name contains any of the patterns (all suites without one).
#
# Suites run in two lanes at once, each lane one suite at a time:
#  - the host lane: unit tests, fuzzers, the nested suite (its own QEMU, no host KVM, no
#    session of this host's) and the e2e suites that start no VM (a "# lane: host" line in
#    their header: brokers, upstreams and clients on this host, each in its own $TMP);
#  - the VM lane: every other e2e suite (sessions, bulkhead-vmm on /dev/kvm, the jail, serve,
#    OCI), one after the other as before, so no two of them watch the host at once. Once it
#    has none left, it takes host-lane suites from the end of that lane's list, so the lanes
#    end together (the host lane starts with the long nested suites).
# TEST_LANES=1 runs everything in one lane, in the order listed. A suite's summary is printed
# when it ends; its whole TAP is in build/test-logs/.
set -u
cd "$(dirname "$0")/.."
BUILD=${BUILD:-build}
export BUILD
patterns=$*
logdir=$BUILD/test-logs
mkdir -p "$logdir"
pass=0 fail=0 skipped=0

wanted() { # NAME: whether a pattern selects it
	[ -n "$patterns" ] || return 0
	for p in $patterns; do
		case $1 in *"$p"*) return 0 ;; esac
	done
	return 1
}

# suite_run NAME: the suite's command, run with its TAP on stdout.
suite_run() {
	case $1 in
	unit/*) env CMOCKA_MESSAGE_OUTPUT=TAP "$BUILD/tests/${1#unit/}" ;;
	fuzz/*) sh tests/fuzz/run-one.sh "$BUILD/fuzz/${1#fuzz/}" "${FUZZ_SECONDS:-15}" ;;
	e2e/*) sh "tests/e2e/${1#e2e/}.sh" ;;
	nested/l1) sh tests/nested/run.sh ;;
	nested/arm64) sh tests/nested/arm64.sh ;;
	esac
}

logof() { echo "$logdir/$(echo "$1" | tr / _).tap"; }

# Each suite says its name on descriptor 9, a FIFO the loop below reads, when it ends.
fifo=$logdir/.ended.$$
rm -f "$fifo"
mkfifo "$fifo" || exit 1
exec 9<> "$fifo"
rm -f "$fifo"
# Interrupted: the suites running go too (each suite's own trap ends what it started).
trap 'kill $(jobs -p) 2> /dev/null; exit 130' INT TERM

# start NAME: runs it in the background (without descriptor 9); its status in its log's .rc.
start() {
	_log=$(logof "$1")
	date +%s > "$_log.start"
	(
		suite_run "$1" > "$_log" 2>&1 9>&-
		echo $? > "$_log.rc"
		echo "$1" >&9
	) &
}

# report NAME: its failures and skips with their reasons, one line for its passes.
report() {
	name=$1 log=$(logof "$1")
	rc=$(cat "$log.rc")
	took=$(($(date +%s) - $(cat "$log.start")))
	rm -f "$log.rc" "$log.start"
	echo "== $name"
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
	echo "   $p passed, $f failed, $s skipped ($took s; log: $log)"
	pass=$((pass + p)) fail=$((fail + f)) skipped=$((skipped + s))
}

# The suites, longest of the host lane first (the nested one) so the lanes end together.
host= vm=
add() { # LANE NAME
	wanted "$2" || return 0
	if [ "$1" = host ] && [ "${TEST_LANES:-2}" != 1 ]; then
		host="$host $2"
	else
		vm="$vm $2"
	fi
}
add host nested/l1
add host nested/arm64
for t in "$BUILD"/tests/test_*; do
	[ -x "$t" ] && add host "unit/$(basename "$t")"
done
for f in "$BUILD"/fuzz/fuzz_*; do
	[ -x "$f" ] && add host "fuzz/$(basename "$f")"
done
for t in tests/e2e/test_*.sh; do
	if grep -q '^# lane: host$' "$t"; then
		add host "e2e/$(basename "$t" .sh)"
	else
		add vm "e2e/$(basename "$t" .sh)"
	fi
done
if [ "${TEST_LANES:-2}" = 1 ]; then # one lane, nested last as it always was
	case " $vm " in *" nested/l1 "*) vm="$(echo " $vm " | sed 's| nested/l1 | |') nested/l1" ;; esac
fi

# Each lane: the suite running now (empty: none) and those left.
run_h= run_v=
set -f
while :; do
	if [ -z "$run_h" ] && [ -n "$host" ]; then
		set -- $host
		run_h=$1; shift; host=$*
		start "$run_h"
	fi
	if [ -z "$run_v" ] && [ -n "$vm" ]; then
		set -- $vm
		run_v=$1; shift; vm=$*
		start "$run_v"
	elif [ -z "$run_v" ] && [ -n "$run_h" ] && [ -n "$host" ]; then
		set -- $host
		eval "run_v=\${$#}"
		host=$(printf '%s\n' "$@" | sed '$d' | tr '\n' ' ')
		start "$run_v"
	fi
	[ -n "$run_h$run_v" ] || break
	read -r ended <&9 || break
	report "$ended"
	[ "$ended" = "$run_h" ] && run_h=
	[ "$ended" = "$run_v" ] && run_v=
done
wait

echo
echo "$pass passed, $fail failed, $skipped skipped"
[ "$fail" -eq 0 ]
