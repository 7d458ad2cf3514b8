#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A guest command running as root takes its exec agent's vsock stream (pidfd_getfd on its
# parent) and sends the host what the agent never would: half a frame header and then
# nothing, a frame trickled a byte at a time, a flood of whole frames, an oversized length,
# a byte on the session's lifeline. Every deadline must still hold: --timeout, the scope's
# expiry, the policy's session lifetime, SIGTERM, a second Ctrl-C, `bulkhead stop`, and the
# same for a `bulkhead exec` client. Every command runs under a watchdog (SIGKILL after 60 s),
# so a launcher that hangs is a failure (status 137), never a stalled suite.
. "$(dirname "$0")/lib.sh"
ATTACK=${ATTACK:-$BUILD/tests/guest-tools/agent-attack}
WATCHDOG=60

if [ ! -x "$ATTACK" ]; then
	not_ok "hostile guest command built" "$ATTACK missing (make guest-tools)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
mkdir -p "$TMP/w"
cp "$ATTACK" "$TMP/w/agent-attack"

# wd ARGS...: bulkhead under the watchdog, stdin from /dev/null; $rc, $TMP/out, $TMP/err.
wd() {
	timeout -s KILL "$WATCHDOG" "$BULKHEAD" "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
}

# expect NAME RC ERR-PATTERN: the last command's status and a line of its stderr.
expect() {
	if [ "$rc" = "$2" ] && grep -q -- "$3" "$TMP/err"; then
		ok "$1"
	else
		not_ok "$1" "expected status $2 and stderr matching: $3" "status: $rc" \
			"stderr: $(tail -n 3 "$TMP/err")"
	fi
}

# wait_attacked: until the guest command reports its attack under way (the marker $mark on
# the share), at most 30 s. 0 when it did.
marks=0
wait_attacked() {
	i=0
	while [ ! -e "$TMP/w/$mark" ] && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
	[ -e "$TMP/w/$mark" ]
}

# bg_session CMD ARGS...: bulkhead CMD -e ATTACK_MARK=... ARGS in the background under the
# watchdog; $pid is bulkhead's.
bg_session() {
	marks=$((marks + 1))
	mark=attacked-$marks
	cmd=$1
	shift
	"$BULKHEAD" "$cmd" -e "ATTACK_MARK=$mark" "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null &
	pid=$!
	( sleep "$WATCHDOG"; kill -KILL "$pid" 2> /dev/null ) &
	dog=$!
}

# bg_wait: bulkhead's status; the watchdog is stopped.
bg_wait() {
	wait "$pid"
	rc=$?
	kill "$dog" 2> /dev/null
	wait "$dog" 2> /dev/null
}

# --- the exec stream against --timeout ---------------------------------------------------
wd run --timeout 3 --work "$TMP/w" -- /work/agent-attack half
expect "half a frame header, then nothing: --timeout still ends the session" 124 "timed out after 3 s"

wd run --timeout 3 --work "$TMP/w" -- /work/agent-attack trickle 2000
expect "a frame trickled a byte at a time: --timeout still ends the session" 124 "timed out after 3 s"

wd run --timeout 3 --work "$TMP/w" -- /work/agent-attack flood
expect "a flood of whole frames: --timeout still ends the session" 124 "timed out after 3 s"
check_eq "... and the flood reached our stdout as it came, byte-exact" "" \
	"$(head -c 1048576 "$TMP/out" | tr -d f)"

# Our stdout is a pipe whose reader never reads: the flood fills it, the session loop
# must not block writing to it.
mkfifo "$TMP/fifo"
sleep 300 < "$TMP/fifo" &
reader=$!
timeout -s KILL "$WATCHDOG" "$BULKHEAD" run --timeout 4 --work "$TMP/w" -- /work/agent-attack flood \
	> "$TMP/fifo" 2> "$TMP/err" < /dev/null
rc=$?
kill "$reader" 2> /dev/null
wait "$reader" 2> /dev/null
expect "a flood into a stdout nobody reads: --timeout still ends the session" 124 "timed out after 4 s"

# Our stderr is a pipe nobody reads, and the guest fills it: with its own stderr, or with
# console noise that -v copies there. Neither may hold the session, or its teardown.
stalled_stderr() { # NAME BULKHEAD-ARGS...
	name=$1
	shift
	sleep 300 < "$TMP/fifo" &
	reader=$!
	timeout -s KILL "$WATCHDOG" "$BUILD/tests/reap-check" "$BULKHEAD" "$@" > "$TMP/out" \
		2> "$TMP/fifo" < /dev/null
	rc=$?
	kill "$reader" 2> /dev/null
	wait "$reader" 2> /dev/null
	check_eq "$name" "124 " "$rc $(grep '^left:' "$TMP/out")"
}
stalled_stderr "64 KiB of the guest's stderr into a stderr nobody reads: --timeout holds, nothing left" \
	run --timeout 4 -- sh -c 'head -c 200000 /dev/zero >&2; sleep 100'
stalled_stderr "a console flood with -v into a stderr nobody reads: --timeout holds, nothing left" \
	run -v --timeout 4 -- sh -c 'tr "\0" A < /dev/zero > /dev/ttyS0'

wd run --timeout 30 --work "$TMP/w" -- /work/agent-attack oversize
expect "an oversized frame length ends the session at once with a clear error" 125 \
	"malformed frame from the guest"

wd run --timeout 30 --work "$TMP/w" -- /work/agent-attack lifeline
expect "a byte on the session's lifeline ends the session with a clear error" 125 \
	"control connection closed"

# --- a guest that never calls home ------------------------------------------------------------
SILENT=$BUILD/tests/guest-tools/initramfs-silent.cpio
wd run --boot-timeout 4 --initrd "$SILENT" -- true
expect "a guest that never calls home: --boot-timeout ends bulkhead run" 125 "did not call home"
wd start --boot-timeout 4 --initrd "$SILENT"
expect "... and bulkhead start, with nothing left" 125 "did not call home"
check_eq "... no run directory left" "" "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
# Interrupted before the guest is ready, `bulkhead start` stops the session it began: nobody
# would have its id. The same when it is killed outright.
for how in INT KILL; do
	"$BULKHEAD" start --initrd "$SILENT" > "$TMP/out" 2> "$TMP/err" < /dev/null &
	pid=$!
	i=0
	while [ -z "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)" ] && [ $i -lt 100 ]; do
		sleep 0.1; i=$((i + 1))
	done
	sleep 1
	kill -$how "$pid"
	wait "$pid"
	rc=$?
	i=0
	while [ -n "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)" ] && [ $i -lt 300 ]; do
		sleep 0.1; i=$((i + 1))
	done
	check_eq "SIG$how to bulkhead start before the guest is ready stops the session" \
		"$([ $how = INT ] && echo 130 || echo 137) " "$rc $(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
done

# --- the scope's expiry and the policy's session lifetime ---------------------------------
soon=$(date -u -d '+6 seconds' +%Y-%m-%dT%H:%M:%SZ)
printf '{ "allow": [], "expires_at": "%s" }\n' "$soon" > "$TMP/scope.json"
wd run --scope "$TMP/scope.json" --work "$TMP/w" -- /work/agent-attack half
expect "half a frame: the scope's expiry still ends the session" 124 "the scope expired ($soon)"

printf '{ "limits": { "max_session_seconds": 3 } }\n' > "$TMP/policy.json"
wd run --policy "$TMP/policy.json" --work "$TMP/w" -- /work/agent-attack half
expect "half a frame: the policy's session lifetime still ends the session" 124 "timed out after 3 s"

# --- signals ---------------------------------------------------------------------------------
bg_session run --work "$TMP/w" -- /work/agent-attack half
if wait_attacked; then
	kill -TERM "$pid"
	bg_wait
	expect "half a frame: SIGTERM still stops the session" 143 "Terminated"
else
	bg_wait; not_ok "half a frame, then SIGTERM" "the attack never started: $(cat "$TMP/err")"
fi

bg_session run --work "$TMP/w" -- /work/agent-attack half
if wait_attacked; then
	kill -INT "$pid" # the first goes to the guest command (which ignores it)
	sleep 1
	kill -INT "$pid"
	bg_wait
	expect "half a frame: a second Ctrl-C still stops the session" 130 "Interrupt"
else
	bg_wait; not_ok "half a frame, then Ctrl-C twice" "the attack never started: $(cat "$TMP/err")"
fi

# -it: every key, Ctrl-C included, is the guest's; "~." at the start of a line is ours.
if command -v script > /dev/null; then
	(sleep 5; printf '\003\003\r~~x\r'; sleep 1; printf '~.') |
		timeout -s KILL "$WATCHDOG" script -qec \
			"$BULKHEAD run -it -- sh -c 'trap \"\" INT; cat'" /dev/null > "$TMP/out" 2>&1
	rc=$?
	check_eq "-it with a guest that ignores Ctrl-C: ~. still stops the session" 130 "$rc"
	grep -q 'stopped from the terminal' "$TMP/out" && grep -q '^~x' "$TMP/out" &&
		ok "... saying so, and ~~ sent one ~" || not_ok "... saying so, and ~~ sent one ~" "$(cat "$TMP/out")"
else
	skip "-it and the ~. escape" "no script(1) (package util-linux)"
fi

# --- a detached session: bulkhead exec and bulkhead stop ------------------------------------
id=$(timeout -s KILL "$WATCHDOG" "$BULKHEAD" start --work "$TMP/w" 2> "$TMP/start.err")
if [ -n "$id" ]; then
	bg_session exec "$id" -- /work/agent-attack half
	if wait_attacked; then
		kill -TERM "$pid"
		bg_wait
		expect "half a frame on a bulkhead exec stream: SIGTERM still ends the client" 143 \
			"Terminated"
	else
		bg_wait; not_ok "bulkhead exec with half a frame" "the attack never started"
	fi
	# A bulkhead exec whose stderr nobody reads, filled by the guest: SIGTERM still ends it.
	sleep 300 < "$TMP/fifo" &
	reader=$!
	"$BULKHEAD" exec "$id" -- sh -c 'head -c 200000 /dev/zero >&2; touch /work/filled; sleep 100' \
		> /dev/null 2> "$TMP/fifo" < /dev/null &
	pid=$!
	( sleep "$WATCHDOG"; kill -KILL "$pid" 2> /dev/null ) &
	dog=$!
	mark=filled
	if wait_attacked; then
		sleep 1
		kill -TERM "$pid"
		bg_wait
		check_eq "a bulkhead exec whose stderr nobody reads: SIGTERM still ends it" 143 "$rc"
	else
		bg_wait; not_ok "bulkhead exec with a full stderr" "the command never filled it"
	fi
	kill "$reader" 2> /dev/null
	wait "$reader" 2> /dev/null
	bg_session exec "$id" -- /work/agent-attack half
	if wait_attacked; then
		timeout -s KILL "$WATCHDOG" "$BULKHEAD" stop "$id" 2> "$TMP/stop.err"
		src=$?
		bg_wait
		check_eq "bulkhead stop ends a session whose exec stream holds half a frame" 0 "$src"
		case $rc in
		125 | 1*) ok "... and its exec client ends too (status $rc)" ;;
		*) not_ok "... and its exec client ends too" "status $rc: $(cat "$TMP/err")" ;;
		esac
	else
		bg_wait; not_ok "bulkhead stop with half a frame" "the attack never started"
		"$BULKHEAD" stop "$id" 2> /dev/null
	fi
else
	not_ok "bulkhead start for the exec tests" "$(cat "$TMP/start.err")"
fi
check_eq "no session is left behind" "" "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
plan_done
