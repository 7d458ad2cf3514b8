#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs a plan inside L1 (tests/nested/README.md) and reports on stdout (the second serial port)
# in a line protocol that tests/nested/run.sh turns into TAP:
#   nested: TEXT                a fact about L1 (boot time, versions)
#   begin NAME                  a step starts
#   | UPTIME LINE               its output, as it printed it (TAP for the suites), with the
#                               L1 uptime at which the line came
#   end NAME STATUS SECONDS     it ended (status 137 and a watchdog report: it hung)
#   nested: done                the plan is over
# PLAN is a comma-separated list of steps: a suite (tests/e2e/NAME.sh or tests/nested/NAME.sh),
# or bench-NAME (bench/nested-NAME.sh). Each runs under its own watchdog (watchdog.sh).
# Usage: l1-run.sh PLAN   (from /bulkhead, as init.sh starts it)
here=tests/nested
plan=$1
export BUILD=${BUILD:-build}
W=$(mktemp -d /tmp/nested-run.XXXXXX)

echo "nested: user space up $(cut -d' ' -f1 /proc/uptime) s after the kernel started"
echo "nested: kernel $(uname -r), $(nproc) CPUs, $(awk '/MemTotal/ { print int($2 / 1024) }' /proc/meminfo) MiB"
echo "nested: kvm_amd nested=$(cat /sys/module/kvm_amd/parameters/nested) npt=$(cat /sys/module/kvm_amd/parameters/npt) nrips=$(cat /sys/module/kvm_amd/parameters/nrips) avic=$(cat /sys/module/kvm_amd/parameters/avic 2> /dev/null) vgif=$(cat /sys/module/kvm_amd/parameters/vgif 2> /dev/null) vls=$(cat /sys/module/kvm_amd/parameters/vls 2> /dev/null)"
echo "nested: cpu flags $(grep -m1 '^flags' /proc/cpuinfo | cut -d: -f2 | tr ' ' '\n' | grep -E '^(svm|npt|nrip_save|avic|vgif|v_vmsave_vmload|lbrv|tsc_scale|vmcb_clean|flushbyasid|decodeassists|pausefilter|pfthreshold|x2apic|tsc_deadline_timer)$' | tr '\n' ' ')"
echo "nested: cgroup $(stat -f -c %T /sys/fs/cgroup) controllers: $(cat /sys/fs/cgroup/cgroup.subtree_control)"

# budget STEP: the watchdog's seconds for a step (generous: a hang, not slowness, is the point).
budget() {
	[ -n "${NESTED_BUDGET:-}" ] && { echo "$NESTED_BUDGET"; return; } # (tests of the watchdog)
	case $1 in
	test_exec | test_l1_sessions | bench-*) echo 900 ;;
	*) echo 480 ;;
	esac
}

# attempt NAME CMD...: runs one step under its watchdog into $W/NAME.out; sets $rc.
attempt() {
	name=$1; shift
	# (a subshell: the watchdog's tree holds both the step and its time-stamper)
	(
		(
			"$@" < /dev/null 2>&1
			echo $? > "$W/$name.rc"
		) | while IFS= read -r line; do
			read -r up _ < /proc/uptime
			printf '%s %s\n' "$up" "$line"
		done > "$W/$name.out"
	) &
	pid=$!
	setsid sh "$here/watchdog.sh" "$pid" "$(budget "$name")" "$W/$name.out" > "$W/$name.dog" 2>&1 &
	dog=$!
	wait "$pid"
	rc=$(cat "$W/$name.rc" 2> /dev/null || echo 137)
	rm -f "$W/$name.rc"
	kill -TERM "-$dog" 2> /dev/null # (dash's kill takes no --)
	wait "$dog" 2> /dev/null
	# Stopped by its watchdog is 137 however it ended: the kills go descendants first, so the
	# step itself may see its children gone and exit 0 before its own kill comes.
	[ ! -s "$W/$name.dog" ] || rc=137
}

# step NAME CMD...: runs one step and reports it. QEMU's emulated AMD SVM now and then shuts a
# nested guest down mid-session (bulkhead-vmm's status 101, a triple fault, seen on no other
# host): a suite that failed with a session ended that way runs once more, its first run's
# failures and the shutdown printed as comments. Its second run's checks are the ones counted.
step() {
	name=$1
	echo "begin $name"
	start=$(date +%s)
	attempt "$@"
	# (Failed: a non-zero status, or a failing check with status 0, as most suites end.)
	if [ "$rc" != 137 ] && [ "${name#bench-}" = "$name" ] &&
		{ [ "$rc" != 0 ] || grep -q '^[0-9.]* not ok' "$W/$name.out"; } &&
		grep -q "bulkhead-vmm failed (status 101)" "$W/$name.out"; then
		echo "| # L1: a session's guest shut down under QEMU's emulated SVM during $name; its first run:"
		grep -E "^[0-9.]+ (not ok|.*bulkhead-vmm failed \(status 101\))" "$W/$name.out" |
			head -n 8 | cut -c 1-300 | sed 's/^/| # /'
		echo "| # L1: running $name once more"
		shift
		attempt "$name" "$@"
	fi
	sed 's/^/| /' "$W/$name.out"
	if [ -s "$W/$name.dog" ]; then
		echo "| not ok - $name hung: stopped by its watchdog"
		sed 's/^/| # /' "$W/$name.dog"
	fi
	echo "end $name $rc $(($(date +%s) - start))"
}

for s in $(echo "$plan" | tr ',' ' '); do
	case $s in
	bench-*)
		f=bench/nested-${s#bench-}.sh ;;
	*)
		f=tests/e2e/$s.sh
		[ -f "$f" ] || f=$here/$s.sh ;;
	esac
	if [ -f "$f" ]; then
		step "$s" sh "$f"
	else
		echo "begin $s"
		echo "| not ok - $s: no such suite or bench in L1's image"
		echo "end $s 1 0"
	fi
done
echo "nested: done"
