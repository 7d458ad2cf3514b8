#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (tests/nested/run.sh): `bulkhead pause ID` writes a running session's guest to
# disk and stops its VM; `bulkhead resume ID` brings it back in a new VMM process. A process
# with its state in memory and a file open keeps counting where it was, its output arrives and
# its exit code is right; its wall clock is the host's again; a second round works; a second
# pause and a resume of a running session are refused; a stop removes the saved guest. A
# session with a work share pauses too, its virtiofsd kept (session/session_pause.c).
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
# The VMM holds its snapshot file from the start: no file it writes may outgrow a save.
fsize=$(sed -n 's/^Max file size *\([0-9a-z]*\).*/\1/p' "/proc/$vmm_before/limits")
case $fsize in
[0-9]*) ok "a pausable session's VMM cannot write a file past what a save needs ($fsize bytes)" ;;
*) not_ok "a pausable session's VMM has a file size limit" "Max file size: $fsize" ;;
esac
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

# A session with a work share pauses too: its virtiofsd lives on, holding the FUSE session
# (node ids, the open file), and the resumed VMM is given the same connection. A job with its
# log open in the share counts on across the pause; a file the host writes meanwhile is there
# for it after; the saved RAM is given back while paused (the kernel's Shmem drops by about
# what was saved).
mkdir -p "$TMP/work"
id=$("$BULKHEAD" start --work "$TMP/work" 2> "$TMP/err")
if [ -z "$id" ]; then
	not_ok "bulkhead start --work prints a session id" "$(cat "$TMP/err")"
	plan_done; exit 0
fi
"$BULKHEAD" exec "$id" -- sh -c 'setsid sh -c "sh -c '"'"'exec 3> /work/log; i=0; while [ \$i -lt 30 ]; do i=\$((i + 1)); echo tick \$i >&3; sleep 0.1; done; cat /work/host-made >&3 2>&1; exit 5'"'"'; echo exit=\$? >> /work/log" < /dev/null > /dev/null 2>&1 &'
sleep 1
shmem() { sed -n 's/^Shmem: *\([0-9]*\) kB/\1/p' /proc/meminfo; }
fsd_before=$(pgrep -x virtiofsd | sort | tr '\n' ' ')
shmem_before=$(shmem)
"$BULKHEAD" pause "$id" 2> "$TMP/err"
check_eq "a session with a work share: bulkhead pause exit 0" "0 " "$? $(cat "$TMP/err")"
shmem_paused=$(shmem)
snap=$BULKHEAD_CACHE/sessions/$id.snap
saved_kb=$(du -k "$snap" | cut -f1)
ticks_paused=$(grep -c '^tick' "$TMP/work/log")
check_eq "while paused its virtiofsd lives on (the same processes)" "$fsd_before" \
	"$(pgrep -x virtiofsd | sort | tr '\n' ' ')"
# (A cache on tmpfs holds the saved file in Shmem too: that much is added back.)
on_tmpfs=0
[ "$(stat -f -c %T "$BULKHEAD_CACHE")" = tmpfs ] && on_tmpfs=$saved_kb
freed=$((shmem_before + on_tmpfs - shmem_paused))
if [ "$freed" -ge $((saved_kb / 2)) ] && [ "$saved_kb" -gt 0 ]; then
	ok "while paused the guest's RAM is given back ($freed kB freed; $saved_kb kB saved)"
else
	not_ok "while paused the guest's RAM is given back" "Shmem $shmem_before -> $shmem_paused kB, saved $saved_kb kB, file in Shmem: $on_tmpfs kB"
fi
echo "from the host" > "$TMP/work/host-made"
sleep 2
check_eq "while paused nothing is written to the share" "$ticks_paused" "$(grep -c '^tick' "$TMP/work/log")"
"$BULKHEAD" resume "$id" 2> "$TMP/err"
check_eq "a session with a work share: bulkhead resume exit 0" "0 " "$? $(cat "$TMP/err")"
i=0
while [ $i -lt 100 ] && ! grep -q '^exit=' "$TMP/work/log"; do sleep 0.2; i=$((i + 1)); done
want=$(seq 1 30 | sed 's/^/tick /'; echo "from the host"; echo exit=5)
check_eq "the job's open file in the share carries on: ticks 1..30, the host's file, exit 5" \
	"$want" "$(cat "$TMP/work/log")"
"$BULKHEAD" pause "$id" 2> "$TMP/err" && "$BULKHEAD" resume "$id" 2>> "$TMP/err"
check_eq "a second pause and resume with the share" "0 " "$? $(cat "$TMP/err")"
out=$("$BULKHEAD" exec "$id" -- sh -c 'echo new > /work/new && cat /work/host-made' 2> "$TMP/err")
check_eq "after it an exec reads and writes the share" "from the host new" "$out $(cat "$TMP/work/new" 2> /dev/null)"
"$BULKHEAD" stop "$id"
check_eq "a stop ends its virtiofsd and removes the saved guest" "no" \
	"$(pgrep -x virtiofsd > /dev/null && echo yes || echo no)$([ -e "$snap" ] && echo ' file')"

# A cache without room for the guest's RAM: the pause is refused, saying so, and the guest runs
# on (nothing written, nothing lost).
mkdir -p "$TMP/small"
if mount -t tmpfs -o size=32m,mode=0700 tmpfs "$TMP/small"; then
	id=$(BULKHEAD_CACHE=$TMP/small "$BULKHEAD" start 2> "$TMP/err")
	"$BULKHEAD" exec "$id" -- sh -c 'echo in-memory > /tmp/m'
	"$BULKHEAD" pause "$id" 2> "$TMP/err"
	rc=$?
	if [ "$rc" = 125 ] && grep -q "MiB free" "$TMP/err" &&
		[ "$("$BULKHEAD" exec "$id" -- cat /tmp/m)" = in-memory ]; then
		ok "a cache without room: pause refused in one line, the guest runs on ($(head -c 160 "$TMP/err"))"
	else
		not_ok "a cache without room: pause refused, the guest runs on" "rc=$rc" "$(cat "$TMP/err")"
	fi
	"$BULKHEAD" stop "$id"
	umount "$TMP/small"
else
	skip "a cache without room" "cannot mount a small tmpfs"
fi

# An image session: the image's root (a virtiofsd of its own, under the guest's overlay)
# carries over as the work share does, and so does what was written over it.
. "$(dirname "$0")/bb_image.sh"
bb_image "$BULKHEAD_CACHE"
mkdir -p "$TMP/work2"
id=$("$BULKHEAD" start --image bb --work "$TMP/work2" 2> "$TMP/err")
"$BULKHEAD" exec "$id" -- sh -c 'echo kept > ~/f' 2>> "$TMP/err"
"$BULKHEAD" pause "$id" 2>> "$TMP/err" && "$BULKHEAD" resume "$id" 2>> "$TMP/err"
check_eq "an image session: pause and resume" "0 " "$? $(cat "$TMP/err")"
check_eq "an image session: the image's root and what was written over it carry over" \
	"kept|from the image|hi 1000" \
	"$("$BULKHEAD" exec "$id" -- sh -c 'echo "$(cat ~/f)|$(cat /etc/motd)|$GREETING $(id -u)"' 2>&1)"
"$BULKHEAD" stop "$id"

# The API: POST /v1/sessions/ID/pause and .../resume, for bulkhead serve's sessions (each has
# a work directory), here one taken from the pool (tests/nested/serve_api.sh).
. "$(dirname "$0")/serve_api.sh"
status() { head -n 1 | cut -d' ' -f2; }
serve_up 1
made=$(api POST /v1/sessions '{}')
check_eq "API: the session comes from the pool (a pool guest pauses as any other)" "true" \
	"$(echo "$made" | sed -n 's/.*"pooled": *\([a-z]*\).*/\1/p')"
sid=$(echo "$made" | sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p')
swork=$(echo "$made" | sed -n 's/.*"work": *"\([^"]*\)".*/\1/p')
api POST "/v1/sessions/$sid/exec" '{"cmd":["sh","-c","echo in-memory > /tmp/m"]}' > /dev/null
api POST "/v1/sessions/$sid/pause" > "$TMP/a"
check_eq "API pause: 200, the session's state paused" "200 paused" \
	"$(status < "$TMP/a") $(sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p' "$TMP/a")"
check_eq "API: GET shows it paused, an exec is refused (409) and so is a second pause (409)" \
	"paused 409 409" "$(api GET "/v1/sessions/$sid" | sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p') $(api POST "/v1/sessions/$sid/exec" '{"cmd":["true"]}' | status) $(api POST "/v1/sessions/$sid/pause" | status)"
check_eq "API: a pause with a body other than {} is refused (400)" "400" \
	"$(api POST "/v1/sessions/$sid/pause" '{"x":1}' | status)"
api POST "/v1/sessions/$sid/resume" > "$TMP/a"
api POST "/v1/sessions/$sid/exec" '{"cmd":["sh","-c","cat /tmp/m > /work/back"]}' > /dev/null
check_eq "API resume: 200, running, and its memory and work directory carry on" \
	"200 running in-memory" \
	"$(status < "$TMP/a") $(sed -n 's/.*"state": *"\([a-z]*\)".*/\1/p' "$TMP/a") $(cat "$swork/back" 2> /dev/null)"
check_eq "API: resuming a running session is refused (409)" "409" \
	"$(api POST "/v1/sessions/$sid/resume" | status)"
kill "$SPID" 2> /dev/null
wait "$SPID" 2> /dev/null
plan_done
