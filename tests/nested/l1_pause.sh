#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (tests/nested/run.sh): `bulkhead pause ID` writes a running session's guest to
# disk and stops its VM; `bulkhead resume ID` brings it back in a new VMM process. A process
# with its state in memory and a file open keeps counting where it was, its output arrives and
# its exit code is right; its wall clock is the host's again; a second round works; a session
# with a work share is
# refused (its virtiofsd cannot hand over), and so are a second pause and a resume of a
# running session; a stop removes the saved guest.
. "$(dirname "$0")/../e2e/lib.sh"

if [ ! -e /dev/kvm ]; then
	skip "pause and resume" "no /dev/kvm (this suite runs inside L1: tests/nested/run.sh)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run" BULKHEAD_CACHE="$TMP/cache"

id=$("$BULKHEAD" start 2> "$TMP/err")
if [ -z "$id" ]; then
	not_ok "bulkhead start prints a session id" "$(cat "$TMP/err")"
	plan_done; exit 0
fi
# The work: 40 ticks 0.1 s apart, counted in a shell variable (memory) and written to an open
# descriptor (a file in the guest's /tmp), then exit 7; detached, so no connection holds it.
"$BULKHEAD" exec "$id" -- sh -c 'setsid sh -c "sh -c '"'"'exec 3> /tmp/log; i=0; while [ \$i -lt 40 ]; do i=\$((i + 1)); echo tick \$i >&3; sleep 0.1; done; exit 7'"'"'; echo exit=\$? >> /tmp/log" < /dev/null > /dev/null 2>&1 &'
sleep 1
vmm_before=$(pgrep -f "bulkhead-vmm .*--snapshot-fd" | head -n 1)
"$BULKHEAD" pause "$id" 2> "$TMP/err"
check_eq "bulkhead pause: exit 0" "0 " "$? $(cat "$TMP/err")"
snap=$BULKHEAD_CACHE/sessions/$id.snap
check_eq "the guest is saved under the session's state, 0600, and its VMM is gone" \
	"600 yes gone" "$(stat -c %a "$snap" 2> /dev/null) $([ -s "$snap" ] && echo yes) $(kill -0 "$vmm_before" 2> /dev/null && echo alive || echo gone)"
"$BULKHEAD" exec "$id" -- true 2> "$TMP/err"
rc=$?
if [ "$rc" = 125 ] && grep -q "paused" "$TMP/err"; then
	ok "an exec while paused: refused, saying the session is paused"
else
	not_ok "an exec while paused is refused" "rc=$rc" "$(cat "$TMP/err")"
fi
"$BULKHEAD" pause "$id" 2> "$TMP/err"
check_eq "pausing a paused session: refused" "125" "$?"
sleep 12 # the guest's kvmclock stands still meanwhile: its wall clock must be set on resume
"$BULKHEAD" resume "$id" 2> "$TMP/err"
check_eq "bulkhead resume: exit 0" "0 " "$? $(cat "$TMP/err")"
vmm_after=$(pgrep -f "bulkhead-vmm .*--restore-fd" | head -n 1)
if [ -n "$vmm_after" ] && [ "$vmm_after" != "$vmm_before" ]; then
	ok "the resumed guest runs in a new VMM process (--restore-fd)"
else
	not_ok "the resumed guest runs in a new VMM process" "before=$vmm_before after=$vmm_after"
fi
"$BULKHEAD" resume "$id" 2> "$TMP/err"
check_eq "resuming a running session: refused" "125" "$?"
skew=$(($("$BULKHEAD" exec "$id" -- date +%s) - $(date +%s)))
if [ "$skew" -ge -3 ] && [ "$skew" -le 3 ]; then
	ok "after a 12 s pause the guest's wall clock is the host's (within 3 s: $skew s)"
else
	not_ok "after a pause the guest's wall clock is the host's" "guest - host: $skew s"
fi
# The process goes on where it was: every tick once, in order, then its exit code.
i=0
while [ $i -lt 100 ]; do
	"$BULKHEAD" exec "$id" -- cat /tmp/log > "$TMP/log" 2> "$TMP/err"
	grep -q '^exit=' "$TMP/log" && break
	sleep 0.2; i=$((i + 1))
done
want=$(seq 1 40 | sed 's/^/tick /'; echo exit=7)
[ "$(cat "$TMP/log")" = "$want" ] ||
	echo "# the guest now: $("$BULKHEAD" exec "$id" -- sh -c 'cat /proc/uptime; grep LOC /proc/interrupts; for p in /proc/[0-9]*; do case $(cat $p/cmdline 2> /dev/null | tr "\0" " ") in *tick*|sleep*) echo "$p $(cut -d" " -f3 $p/stat) $(cat $p/wchan) $(cat $p/cmdline | tr "\0" " " | cut -c1-40)";; esac; done; cat /sys/devices/system/clockevents/clockevent0/current_device 2> /dev/null; dmesg | tail -n 5' 2>&1 | tr '\n' '|')"
check_eq "the paused process continues where it was: ticks 1..40 once each, in order, exit 7" \
	"$want" "$(cat "$TMP/log")"
# A second round on the new VMM.
"$BULKHEAD" pause "$id" 2> "$TMP/err" && "$BULKHEAD" resume "$id" 2>> "$TMP/err"
check_eq "a second pause and resume" "0 " "$? $(cat "$TMP/err")"
run_out=$("$BULKHEAD" exec "$id" -- sh -c 'echo after; exit 3' 2> "$TMP/err")
check_eq "after two pauses an exec runs, its output and exit code right" "after 3" "$run_out $?"
"$BULKHEAD" stop "$id"
check_eq "a stop of the session removes its saved guest" "no" "$([ -e "$snap" ] && echo yes || echo no)"

# A session with a work share cannot pause, and runs on.
mkdir -p "$TMP/work"
id=$("$BULKHEAD" start --work "$TMP/work" 2> "$TMP/err")
"$BULKHEAD" pause "$id" 2> "$TMP/err"
rc=$?
if [ "$rc" = 125 ] && grep -q "virtiofsd cannot hand" "$TMP/err" &&
	[ "$("$BULKHEAD" exec "$id" -- sh -c 'echo still > f; cat f')" = still ]; then
	ok "a session with a work share: pause refused in one line, the session runs on"
else
	not_ok "a session with a work share: pause refused" "rc=$rc" "$(cat "$TMP/err")"
fi
"$BULKHEAD" stop "$id"
plan_done
