#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Per-session cgroups (jail/cgroup.c): every process of a session is in them, with the memory,
# pids and CPU limits set; a session that goes over its memory limit ends with a clear
# message while another session beside it is unaffected; nothing is left afterwards.
. "$(dirname "$0")/lib.sh"

export BULKHEAD_RUNDIR="$TMP/run"
mkdir -p "$TMP/work"
"$BULKHEAD" run -v --work "$TMP/work" -- sleep 8 > /dev/null 2> "$TMP/err" &
rpid=$!
i=0; while [ -z "$(ls -d "$BULKHEAD_RUNDIR"/*/ 2> /dev/null)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
sleep 1.5
id=$(basename "$(ls -d "$BULKHEAD_RUNDIR"/*/ | head -n 1)")
if grep -q 'no resource limits' "$TMP/err"; then
	skip "session cgroups" "$(grep 'no resource limits' "$TMP/err")"
	wait $rpid; plan_done; exit 0
fi
# cgroup v1 here: one directory per controller; v2: one directory.
mem=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "bulkhead-$id" | while read -r d; do
	[ -f "$d/memory.limit_in_bytes" ] || [ -f "$d/memory.max" ] && echo "$d"; done | head -n 1)
pids=$(find /sys/fs/cgroup -maxdepth 4 -type d -name "bulkhead-$id" | while read -r d; do
	[ -f "$d/pids.max" ] && echo "$d"; done | head -n 1)
if [ -n "$mem" ] && [ -n "$pids" ]; then
	limit=$(cat "$mem/memory.limit_in_bytes" 2> /dev/null || cat "$mem/memory.max")
	check_eq "memory limit: guest RAM (256 MiB) + 512 MiB overhead" $(((256 + 512) << 20)) "$limit"
	check_eq "pids limit" 512 "$(cat "$pids/pids.max")"
	comms=$(for p in $(cat "$mem/cgroup.procs"); do cat /proc/$p/comm; done | sort | tr '\n' ' ')
	case $comms in
	# (the VM process: QEMU here, bulkhead-vmm where KVM runs Linux, as in tests/nested/)
	*bulkhead-vsock*qemu-system-x86* | *qemu-system-x86*bulkhead-vsock* | *bulkhead-vmm*bulkhead-vsock*)
		case $comms in
		*virtiofsd*) ok "the VM, bulkhead-vsock and virtiofsd are all in the session's cgroup ($comms)" ;;
		*) not_ok "virtiofsd in the session's cgroup" "$comms" ;;
		esac ;;
	*) not_ok "the session's processes are in its cgroup" "$comms" ;;
	esac
	# The pids limit holds: a shell that joins the session's pids cgroup starts sleepers until
	# a fork fails (which ends it), counting each one that started.
	sh -c 'echo $$ > "$1/cgroup.procs" || exit 1; n=0
		while [ $n -lt 1000 ]; do sleep 31.4159 & n=$((n + 1)); echo $n > "$2"; done' \
		_ "$pids" "$TMP/forks" 2> /dev/null
	started=$(cat "$TMP/forks" 2> /dev/null || echo 0)
	peak=$(cat "$pids/pids.current")
	if [ "$started" -gt 0 ] && [ "$started" -lt 512 ] && [ "$peak" -le 512 ]; then
		ok "the pids limit holds: $started more processes started in the session's cgroup, then fork failed"
	else
		not_ok "the pids limit holds" "started=$started pids.current=$peak"
	fi
else
	not_ok "the session has its cgroups" "$(cat "$TMP/err")"
fi
wait $rpid
rc=$?
# While its pids cgroup was full, a helper of the session itself (a virtiofsd or VMM thread)
# may have failed to start: the session may then end with 125 and its reason, never hang.
if [ $rc = 0 ] || { [ $rc = 125 ] && tail -n 1 "$TMP/err" | grep -q '^bulkhead: '; }; then
	ok "the session itself ends by itself (status $rc)"
else
	not_ok "the session itself ends by itself, 0 or 125 with its reason" "rc=$rc" "$(cat "$TMP/err")"
fi
check_eq "its cgroups are removed afterwards" "" \
	"$(find /sys/fs/cgroup -maxdepth 4 -type d -name "bulkhead-$id" 2> /dev/null)"
# The sleepers above joined the session's cgroup from outside and would live 31 s: they are
# the session's all the same, and end with it (else its cgroup could not be removed).
check_eq "processes that joined the session's cgroup end with the session" 0 \
	"$(pgrep -f 'sleep 31.4159' | wc -l)"
pkill -f 'sleep 31.4159'

# Over the limit: 220 MiB written into the guest's RAM with the session capped at 256 MiB.
"$BULKHEAD" run -- sh -c 'sleep 3; echo neighbour-ok' > "$TMP/neighbour" 2>&1 &
npid=$!
run_capture run --mem 512 --mem-limit 256 -- sh -c 'dd if=/dev/zero of=/tmp/fill bs=1M count=220 2> /dev/null; echo survived'
if [ "$rc" = 125 ] && grep -q 'went over its memory limit (256 MiB' "$TMP/err" && ! grep -q survived "$TMP/out"; then
	ok "a session over its memory limit ends, and says why: $(tail -n 1 "$TMP/err")"
else
	not_ok "memory limit enforced" "rc=$rc" "$(cat "$TMP/out" "$TMP/err")"
fi
wait $npid
nrc=$?
check_eq "a session running beside it is unaffected" "0 neighbour-ok" "$nrc $(cat "$TMP/neighbour")"
run_capture run --mem 512 --mem-limit 768 -- sh -c 'dd if=/dev/zero of=/tmp/fill bs=1M count=220 2> /dev/null; echo survived'
check_eq "the same guest within a larger limit is fine" "0 survived" "$rc $(cat "$TMP/out")"
# A process that cannot end (frozen by a cgroup v1 freezer of its own, then joined to the
# session's pids cgroup: only root can do this): the session still ends in bounded time, and
# says that its cgroups were left rather than returning as if all were well.
if [ -d /sys/fs/cgroup/freezer ] && [ -d /sys/fs/cgroup/pids ] && [ "$(id -u)" = 0 ]; then
	FZ=/sys/fs/cgroup/freezer/bulkhead-test-$$
	mkdir "$FZ"
	export BULKHEAD_RUNDIR="$TMP/run-frozen"; mkdir -m 700 "$BULKHEAD_RUNDIR"
	"$BULKHEAD" run -- sleep 4 > /dev/null 2> "$TMP/frozen.err" &
	fpid=$!
	i=0; while [ -z "$(ls -d "$BULKHEAD_RUNDIR"/*/ 2> /dev/null)" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	sleep 1
	fid=$(basename "$(ls -d "$BULKHEAD_RUNDIR"/*/ | head -n 1)")
	fpids=$(find /sys/fs/cgroup/pids -maxdepth 3 -type d -name "bulkhead-$fid" | head -n 1)
	sleep 1000 &
	frozen=$!
	echo "$frozen" > "$FZ/cgroup.procs" && echo "$frozen" > "$fpids/cgroup.procs" &&
		echo FROZEN > "$FZ/freezer.state"
	t0=$(date +%s)
	wait "$fpid"
	frc=$?
	took=$(($(date +%s) - t0))
	if grep -q "cgroups could not be removed (.*bulkhead-$fid): processes in them would not end" "$TMP/frozen.err" &&
		[ "$took" -le 20 ]; then
		ok "a process that cannot end leaves the session's cgroups, said (exit $frc after $took s): $(tail -n 1 "$TMP/frozen.err")"
	else
		not_ok "a cgroup left behind is said" "rc=$frc after $took s" "$(cat "$TMP/frozen.err")"
	fi
	echo THAWED > "$FZ/freezer.state"
	kill -9 "$frozen" 2> /dev/null; wait "$frozen" 2> /dev/null
	sleep 0.2
	find /sys/fs/cgroup -maxdepth 4 -type d -name "bulkhead-$fid" -exec rmdir {} \; 2> /dev/null
	rmdir "$FZ"
else
	skip "a process that cannot end in the session's cgroups" "needs root and cgroup v1 freezer and pids hierarchies"
fi
plan_done
