#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: the vsock exec agent — `bulkhead run` through the agent (stdin,
# binary output, streams kept apart, exit codes and signals), and sessions with
# many execs (`bulkhead start` / `exec` / `stop`), under the QEMU engine here.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BIN/bulkhead-vsock" ]; then
	skip "exec suite" "bulkhead-vsock not built (run make)"; plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"

# --- run through the agent ----------------------------------------------------
# The guest keeps the 64 MiB in its /tmp (RAM): give it room beside its image (--mem 512).
run_capture run --mem 512 -- sh -c 'head -c 67108864 /dev/urandom | tee /tmp/r | sha256sum >&2; cat /tmp/r'
want=$(head -n 1 "$TMP/err" | cut -d' ' -f1)
got=$(sha256sum < "$TMP/out" | cut -d' ' -f1)
if [ "$rc" = 0 ] && [ -n "$want" ] && [ "$want" = "$got" ] && [ "$(wc -c < "$TMP/out")" = 67108864 ]; then
	ok "64 MiB of binary stdout with a matching SHA-256"
else
	not_ok "64 MiB of binary stdout with a matching SHA-256" "rc=$rc guest=$want host=$got" \
		"$(wc -c < "$TMP/out") bytes out" "$(sed 1d "$TMP/err" | head -c 600)"
fi

head -c 67108864 /dev/urandom > "$TMP/in"
"$BULKHEAD" run --mem 512 -i -- sh -c 'cat | tee /tmp/in | sha256sum >&2; cat /tmp/in' < "$TMP/in" > "$TMP/out" 2> "$TMP/err"
rc=$?
want=$(sha256sum < "$TMP/in" | cut -d' ' -f1)
if [ "$rc" = 0 ] && [ "$(cut -d' ' -f1 < "$TMP/err")" = "$want" ] &&
	[ "$(sha256sum < "$TMP/out" | cut -d' ' -f1)" = "$want" ]; then
	ok "-i: 64 MiB of stdin round-trips through cat"
else
	not_ok "-i: 64 MiB of stdin round-trips through cat" "rc=$rc" "$(head -c 300 "$TMP/err")"
fi

echo "from host stdin" | "$BULKHEAD" run -- cat > "$TMP/out" 2>&1
check_eq "without -i the command reads /dev/null" "" "$(cat "$TMP/out")"

run_capture run -- sh -c 'i=0; while [ $i -lt 200 ]; do echo "out $i"; echo "err $i" >&2; i=$((i+1)); done'
seq 0 199 | sed 's/^/out /' > "$TMP/want-out"
seq 0 199 | sed 's/^/err /' > "$TMP/want-err"
cmp -s "$TMP/out" "$TMP/want-out" && cmp -s "$TMP/err" "$TMP/want-err" &&
	ok "interleaved stdout and stderr stay in order, each in its own stream" ||
	not_ok "interleaved stdout and stderr stay in order, each in its own stream" "$(head -n 3 "$TMP/out")"

run_capture run -t -- sh -c 'tty; stty size'
case $(head -n 1 "$TMP/out") in
/dev/pts/*) ok "-t gives the command a pseudo-terminal" ;;
*) not_ok "-t gives the command a pseudo-terminal" "$(cat "$TMP/out")" ;;
esac

# An interactive shell on a pty, typed into through script(1)'s terminal: line
# editing, Ctrl-C interrupting the foreground command, the window size, exit code.
if command -v script > /dev/null; then
	# Each line is typed once the terminal shows what the one before did, never on a clock:
	# a slow boot (under nested KVM, on a loaded host) would otherwise get the lines early,
	# and the Ctrl-C would reach the shell instead of its foreground command.
	type_after() { # PATTERN TEXT: type TEXT once a line matching PATTERN is on the terminal
		_i=0
		while ! tr -d '\r' < "$TMP/pty" | grep -q -- "$1" && [ $_i -lt 1200 ]; do
			sleep 0.1; _i=$((_i + 1))
		done
		printf "$2"
	}
	it_session() {
		: > "$TMP/pty"
		(type_after '^typed-ready$' 'echo $((6*7))\r'
		 type_after '^42$' 'echo sleeping; sleep 100\r'
		 type_after '^sleeping$' ''; sleep 1; printf '\003'
		 printf 'echo after-$?\r'
		 type_after '^after-' 'stty size\r'
		 type_after '^33 101$' 'exit 3\r') |
			timeout 180 script -qec "stty rows 33 cols 101; $BULKHEAD run -it -- sh -c 'echo typed-ready; exec sh'" \
				/dev/null > "$TMP/pty" 2>&1
		rc=$?
	}
	it_session
	# Inside L1 (tests/nested) the guest runs on QEMU's emulated AMD SVM, which has now and then
	# shut a nested guest down mid-session (bulkhead-vmm's status 101, a triple fault), seen
	# nowhere else: said here, and the session tried once more. A second one fails the test.
	if [ "${BULKHEAD_L1:-}" = 1 ] && [ "$rc" = 125 ] &&
		grep -q "bulkhead-vmm failed (status 101)" "$TMP/pty"; then
		echo "# L1: the -it guest shut down (bulkhead-vmm status 101); trying it once more"
		it_session
	fi
	tr -d '\r' < "$TMP/pty" > "$TMP/pty.txt"
	check_eq "-it: the shell's exit code comes back" 3 "$rc"
	grep -qx 42 "$TMP/pty.txt" && ok "-it: typed commands run" || not_ok "-it: typed commands run" "$(head -c 400 "$TMP/pty.txt")"
	grep -q 'after-130' "$TMP/pty.txt" && ok "-it: Ctrl-C interrupts the foreground command" ||
		not_ok "-it: Ctrl-C interrupts the foreground command" "$(head -c 600 "$TMP/pty.txt")"
	grep -qx '33 101' "$TMP/pty.txt" && ok "-it: the window size follows the terminal" ||
		not_ok "-it: the window size follows the terminal" "$(head -c 600 "$TMP/pty.txt")"
else
	skip "-it session" "script(1) from util-linux is not installed"
fi
run_capture run -it -- true
check_eq "-it without a terminal on stdin: 125" 125 "$rc"

# --- a session with many execs ----------------------------------------------------
# --log keeps what the detached session says of its own end (tested at its stop below).
start_session() {
	: > "$TMP/session.log"
	id=$("$BULKHEAD" start --log "$TMP/session.log" 2> "$TMP/err")
	rc=$?
	[ "$rc" = 0 ] && [ -n "$id" ]
}
# How many execs: 1,000 here; inside L1 (an exec there takes about 0.4 s of emulated SVM) 256,
# one per exit code, which is what the kvm engine has to get right there.
execs=${EXECS:-1000}
[ "${BULKHEAD_L1:-}" = 1 ] && execs=${EXECS:-256}
many_execs() { # sets bad: how many of $execs execs came back with the wrong code
	bad=0
	i=0
	while [ $i -lt "$execs" ]; do
		code=$((i % 256))
		"$BULKHEAD" exec "$id" -- sh -c "exit $code" < /dev/null 2> "$TMP/exec-err"
		got=$?
		if [ "$got" != "$code" ]; then
			bad=$((bad + 1))
			[ $bad -lt 5 ] && echo "# exec $i: want $code got $got: $(head -c 300 "$TMP/exec-err")"
		fi
		i=$((i + 1))
	done
}
if ! start_session; then
	not_ok "bulkhead start prints a session id" "rc=$rc" "$(cat "$TMP/err")"
	plan_done; exit 0
fi
ok "bulkhead start prints a session id"
many_execs
# As for -it above: inside L1 only, a session whose guest QEMU's emulated SVM shut down (the
# log says bulkhead-vmm's status 101) is said here and tried once more on a fresh session.
if [ "$bad" != 0 ] && [ "${BULKHEAD_L1:-}" = 1 ] &&
	grep -q "bulkhead-vmm failed (status 101)" "$TMP/session.log"; then
	echo "# L1: the session's guest shut down (bulkhead-vmm status 101); trying once more"
	"$BULKHEAD" stop "$id" 2> /dev/null
	start_session && many_execs
fi
[ "$bad" = 0 ] || echo "# the session's log: $(head -c 600 "$TMP/session.log")"
check_eq "$execs sequential execs in one session, every exit code 0..255 right" 0 "$bad"

"$BULKHEAD" exec "$id" -- sh -c 'kill -TERM $$'
check_eq "exec: death by SIGTERM is 143" 143 "$?"
"$BULKHEAD" exec "$id" -- sh -c 'kill -KILL $$'
check_eq "exec: death by SIGKILL is 137" 137 "$?"
"$BULKHEAD" exec "$id" -- /no/such/thing 2> "$TMP/err"
check_eq "exec: a missing command is 127" 127 "$?"

# Several at once.
for n in 1 2 3 4 5 6 7 8; do
	"$BULKHEAD" exec "$id" -- sh -c "sleep 1; echo par-$n" > "$TMP/par-$n" &
done
wait
all=$(cat "$TMP"/par-* | sort | tr '\n' ' ')
check_eq "8 execs at once each get their own output" "par-1 par-2 par-3 par-4 par-5 par-6 par-7 par-8 " "$all"

# Ctrl-C without -t reaches the guest command as SIGINT.
"$BULKHEAD" exec "$id" -- sh -c 'trap "echo got-int; exit 7" INT; sleep 30 & wait' > "$TMP/out" &
pid=$!
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
if [ "$rc" = 7 ] && grep -q got-int "$TMP/out"; then
	ok "Ctrl-C without -t sends SIGINT to the guest command"
else
	not_ok "Ctrl-C without -t sends SIGINT to the guest command" "rc=$rc" "$(cat "$TMP/out")"
fi

"$BULKHEAD" stop "$id"
check_eq "bulkhead stop ends the session" 0 "$?"
grep -q "Terminated; the VM was stopped" "$TMP/session.log" &&
	ok "start --log: the session's log says how it ended" ||
	not_ok "start --log: the session's log says how it ended" "$(head -c 400 "$TMP/session.log")"
check_eq "nothing is left of the session" "" "$(ls -A "$BULKHEAD_RUNDIR")"
"$BULKHEAD" exec "$id" -- true 2> "$TMP/err"
rc=$?
if [ "$rc" = 125 ] && [ "$(wc -l < "$TMP/err")" = 1 ]; then
	ok "exec on a stopped session: 125 and one line"
else
	not_ok "exec on a stopped session: 125 and one line" "rc=$rc" "$(cat "$TMP/err")"
fi
"$BULKHEAD" exec nothex -- true 2> /dev/null
check_eq "exec with a malformed id: 125" 125 "$?"

plan_done
