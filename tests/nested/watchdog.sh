#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The watchdog of one command in L1 (tests/nested/l1-run.sh starts it beside the command, in a
# session of its own so that it can be stopped whole): after SECONDS, if PID still runs, it
# prints the state of PID and every descendant (each thread's state, kernel wait channel, kernel
# stack and system call), the command's last output lines, the last console lines of any guest
# beside it and the kernel's last messages; then kills them all. A hang is a clear failure with
# its evidence, never a stalled run.
# Usage: watchdog.sh PID SECONDS OUTPUT-FILE
pid=$1 secs=$2 out=$3

sleep "$secs"
kill -0 "$pid" 2> /dev/null || exit 0

# PID and its descendants, parents first (L1's view: jailed ones in their own PID namespaces too).
tree() {
	ps -e -o pid=,ppid= | awk -v root="$1" '
		{ parent[$1] = $2 }
		END { keep[root] = 1; print root
		      do { more = 0; for (p in parent) if (!(p in keep) && (parent[p] in keep)) { keep[p] = 1; print p; more = 1 } } while (more) }'
}
pids=$(tree "$pid")
echo "watchdog: still running after $secs s; state before the kill:"
for p in $pids; do
	[ -d "/proc/$p" ] || continue
	echo "process $p ($(cat "/proc/$p/comm" 2> /dev/null)): $(tr '\0' ' ' < "/proc/$p/cmdline" 2> /dev/null | cut -c1-200)"
	for t in /proc/"$p"/task/*; do
		state=$(sed -n 's/^State:[[:space:]]*//p' "$t/status" 2> /dev/null)
		echo "  thread ${t##*/} ($(cat "$t/comm" 2> /dev/null)) $state wchan=$(cat "$t/wchan" 2> /dev/null) syscall=$(cut -d' ' -f1 "$t/syscall" 2> /dev/null)"
		sed 's/^/    /' "$t/stack" 2> /dev/null | head -n 12
	done
done
echo "last output lines:"
tail -n 15 "$out" | sed 's/^/  /'
# A guest's console, where a suite kept one (--console FILE in its temporary directory).
for c in $(find /tmp -maxdepth 3 -name 'console*' -type f -mmin -10 2> /dev/null | head -n 3); do
	echo "last lines of $c:"
	tail -n 10 "$c" | sed 's/^/  /'
done
echo "kernel's last messages:"
dmesg | tail -n 10 | sed 's/^/  /'
# Descendants first, PID last, with TERM ignored meanwhile: the runner stops this watchdog (TERM
# to its session) as soon as PID ends, which must not cut the kills short and leave a child.
trap '' TERM
for p in $(printf '%s\n' $pids | tac); do kill -KILL "$p" 2> /dev/null; done
echo "watchdog: killed $(echo $pids | wc -w) processes"
