#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (tests/nested/run.sh): whole sessions under bulkhead-vmm (--engine kvm) beyond what
# the e2e suites run there: the engine really is bulkhead-vmm, jailed; the work share read-write
# and read-only; 2 and 4 vCPUs seen by the guest and used at once; the session's cgroup v2 limits;
# -i through the agent; a container under bulkhead-oci. Needs a KVM that runs Linux user space (L1 has one).
. "$(dirname "$0")/../e2e/lib.sh"

if [ ! -e /dev/kvm ]; then
	skip "sessions under bulkhead-vmm" "no /dev/kvm (this suite runs inside L1: tests/nested/run.sh)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"

# The engine: bulkhead-vmm, started jailed with its files as descriptors.
run_capture run --engine kvm -v -- sh -c 'echo hello from L2; exit 3'
check_eq "--engine kvm: the command's exit code" 3 "$rc"
check_eq "--engine kvm: the command's stdout" "hello from L2" "$(cat "$TMP/out")"
grep -q "engine command: '[^']*bulkhead-vmm' '--kernel-fd'" "$TMP/err" &&
	ok "--engine kvm runs bulkhead-vmm, jailed (files as descriptors)" ||
	not_ok "--engine kvm runs bulkhead-vmm, jailed" "$(grep -m3 engine "$TMP/err")"
run_capture run -- true
check_eq "auto picks kvm here and a session runs" 0 "$rc"

# The probe guests' verdicts are kept for this boot of this KVM (session/kvm_probe_cache.c):
# a session after the first runs no probe guest, a malformed file is probed again, and
# `bulkhead doctor` always probes afresh and keeps what it found.
export BULKHEAD_CACHE="$TMP/pcache"
run_capture run --engine kvm -- true
kept=$BULKHEAD_CACHE/probe/$(ls "$BULKHEAD_CACHE/probe" 2> /dev/null | head -n 1)
check_eq "a session keeps the probe guests' verdicts (ring-3 syscalls work, kernel mode native), 0600" \
	"0 ring3 1,native 1 600" "$rc $(sed -n 1,2p "$kept" 2> /dev/null | paste -sd, -) $(stat -c %a "$kept" 2> /dev/null)"
printf 'ring3 2\nnative 2\nmips 1.000\n' > "$kept"
run_capture run --engine kvm -- true
case $rc:$(cat "$TMP/err") in
0:*) not_ok "the next session takes the kept verdicts (here made to say ring 3 is broken)" "it ran: the probe guests ran again" ;;
*"ring-3 syscalls are broken"*) ok "the next session takes the kept verdicts (here made to say ring 3 is broken)" ;;
*) not_ok "the next session takes the kept verdicts (here made to say ring 3 is broken)" "rc=$rc: $(tail -n 3 "$TMP/err")" ;;
esac
printf 'ring3 1\nnative 1\nmips fast\n' > "$kept"
run_capture run --engine kvm -- true
check_eq "a malformed kept verdict is probed again: the session runs, the file is mended" \
	"0 ring3 1, 0 fast" "$rc $(head -n 1 "$kept"), $(grep -c fast "$kept") fast"
printf 'ring3 2\nnative 2\nmips 1.000\n' > "$kept"
"$BULKHEAD" doctor > "$TMP/doctor.out" 2>&1
check_eq "bulkhead doctor probes afresh and keeps what it found" "ring3 1" "$(head -n 1 "$kept")"
unset BULKHEAD_CACHE

# The work share: read-write, then read-only.
mkdir -p "$TMP/work"
printf 'from the host\n' > "$TMP/work/in.txt"
run_capture run --engine kvm --work "$TMP/work" -- sh -c 'cat in.txt; pwd; echo from-the-guest > out.txt; mkdir d; echo x > d/y'
check_eq "--work (rw): the guest reads the share, starting in /work" "from the host
/work" "$(cat "$TMP/out")"
check_eq "--work (rw): what the guest writes is on the host" "from-the-guest x" \
	"$(cat "$TMP/work/out.txt" 2> /dev/null) $(cat "$TMP/work/d/y" 2> /dev/null)"
run_capture run --engine kvm --work "$TMP/work:ro" -- sh -c 'cat in.txt; echo changed > in.txt; echo w=$?; touch new 2>&1; echo t=$?'
case $(cat "$TMP/out") in
"from the host"*"w=1"*"t=1") ok "--work DIR:ro: the guest reads, and its writes fail" ;;
*) not_ok "--work DIR:ro: the guest reads, and its writes fail" "$(cat "$TMP/out")" ;;
esac
check_eq "--work DIR:ro: the host's files are unchanged" "from the host|" "$(cat "$TMP/work/in.txt")|$(ls "$TMP/work/new" 2> /dev/null)"

# vCPUs: the guest sees them, and they run at once (each busy loop on its own CPU).
for n in 2 4; do
	run_capture run --engine kvm --cpus $n -- sh -c '
		nproc; grep -c ^processor /proc/cpuinfo
		i=0; while [ $i -lt '$n' ]; do (j=0; while [ $j -lt 20000 ]; do j=$((j + 1)); done; echo done) & i=$((i + 1)); done
		wait; grep -c "" /proc/interrupts > /dev/null'
	want="$n
$n
$(i=0; while [ $i -lt $n ]; do echo done; i=$((i + 1)); done)"
	if [ "$(cat "$TMP/out")" = "$want" ]; then
		ok "--cpus $n: the guest has $n CPUs, and $n loops at once finish"
	else # (its stderr too: it once printed nothing in CI, and said nothing of why)
		not_ok "--cpus $n: the guest has $n CPUs, and $n loops at once finish" "rc=$rc" \
			"stdout: $(cat "$TMP/out")" "stderr: $(tail -n 5 "$TMP/err")"
	fi
done

# An image session under bulkhead-vmm: two virtio-fs devices (the work share and the image's
# root, each its own virtiofsd), the overlay, the chroot and the image's user, from an image
# written by hand (tests/nested/bb_image.sh).
. "$(dirname "$0")/bb_image.sh"
bb_image "$TMP/cache"
export BULKHEAD_CACHE="$TMP/cache"
run_capture run --engine kvm --image bb --work "$TMP/work" -- sh -c \
	'cat /etc/motd; echo "$GREETING $HOME $(pwd) $(id -u):$(id -g)"; cat /work/in.txt
	 echo new > ~/f && cat ~/f; rm /etc/motd 2> /dev/null || echo "rm: denied"'
unset BULKHEAD_CACHE
want="from the image
hi /home/app /work 1000:1000
from the host
new
rm: denied"
if [ "$(cat "$TMP/out")" = "$want" ]; then
	ok "--engine kvm --image: the image's root, environment and user beside the work share"
else
	not_ok "--engine kvm --image: the image's root, environment and user beside the work share" \
		"rc=$rc" "out: $(cat "$TMP/out")" "err: $(tail -n 5 "$TMP/err")"
fi
check_eq "--engine kvm --image: the image is unchanged" "from the image|" \
	"$(cat "$img/rootfs/etc/motd")|$(ls "$img/rootfs/home/app")"

# A container under bulkhead-oci (auto picks kvm here): the bundle's root and two directory
# binds, three virtio-fs devices of bulkhead-vmm beside the vsock. L1 has no python for a
# subreaper, so the output and the state tell the story.
oci=$TMP/oci
mkdir -p "$oci/rootfs/bin" "$oci/rootfs/etc" "$oci/rootfs/srv" "$oci/rootfs/mnt" "$oci/rw" "$oci/ro"
cp /usr/bin/busybox "$oci/rootfs/bin/busybox"
for a in sh cat echo hostname; do ln -s busybox "$oci/rootfs/bin/$a"; done
echo from-ro > "$oci/ro/in"
cat > "$oci/config.json" << JSON
{ "ociVersion": "1.0.2", "hostname": "l1-box", "root": { "path": "rootfs" },
  "process": { "args": ["sh", "-c", "hostname; cat /mnt/in; echo from-guest > /srv/out"], "cwd": "/",
               "env": ["PATH=/bin"], "user": { "uid": 0, "gid": 0 } },
  "mounts": [ { "destination": "/proc", "type": "proc", "source": "proc" },
              { "destination": "/srv", "type": "bind", "source": "$oci/rw", "options": ["rbind"] },
              { "destination": "/mnt", "type": "bind", "source": "$oci/ro", "options": ["rbind", "ro"] } ] }
JSON
"$BIN/bulkhead-oci" --root "$oci/state" create --bundle "$oci" c1 > "$oci/out" 2> "$oci/err" < /dev/null &&
	"$BIN/bulkhead-oci" --root "$oci/state" start c1
i=0
while ! "$BIN/bulkhead-oci" --root "$oci/state" state c1 2> /dev/null | grep -q '"stopped"' && [ $i -lt 600 ]; do
	sleep 0.1; i=$((i + 1))
done
check_eq "bulkhead-oci under kvm: the root, a read-write and a read-only bind" "l1-box
from-ro
from-guest" "$(cat "$oci/out"; cat "$oci/rw/out" 2> /dev/null)"
"$BIN/bulkhead-oci" --root "$oci/state" delete c1
check_eq "bulkhead-oci under kvm: delete leaves no state and no run directory" "" \
	"$(find "$oci/state" "$BULKHEAD_RUNDIR" -mindepth 1 2> /dev/null)"

# -i: stdin through the agent.
printf 'line one\nline two\n' | "$BULKHEAD" run --engine kvm -i -- sh -c 'wc -l; cat > /dev/null' > "$TMP/out" 2> "$TMP/err"
check_eq "-i: the guest reads stdin" "2" "$(tr -d ' ' < "$TMP/out")"

# cgroup v2: the session's processes under one directory with its limits, removed afterwards.
if [ "$(stat -f -c %T /sys/fs/cgroup)" = cgroup2fs ]; then
	"$BULKHEAD" run --engine kvm --mem 256 -- sleep 6 > /dev/null 2> "$TMP/err" &
	rpid=$!
	vm=$(vm_pid)
	cg=
	[ -n "$vm" ] && cg=$(sed -n 's/^0:://p' "/proc/$vm/cgroup")
	if [ -n "$cg" ] && [ -f "/sys/fs/cgroup$cg/memory.max" ]; then
		check_eq "cgroup v2: the VM's memory.max is guest RAM + 512 MiB" $(((256 + 512) << 20)) \
			"$(cat "/sys/fs/cgroup$cg/memory.max")"
		check_eq "cgroup v2: pids.max" 512 "$(cat "/sys/fs/cgroup$cg/pids.max")"
		comms=$(for p in $(cat "/sys/fs/cgroup$cg/cgroup.procs"); do cat "/proc/$p/comm"; done | sort | tr '\n' ' ')
		case $comms in
		*bulkhead-vmm*bulkhead-vsock*) ok "cgroup v2: bulkhead-vmm and bulkhead-vsock are in it ($comms)" ;;
		*) not_ok "cgroup v2: bulkhead-vmm and bulkhead-vsock are in it" "$comms" ;;
		esac
	else
		not_ok "cgroup v2: the VM process is in a session cgroup with limits" "vm=$vm cgroup=$cg" "$(cat "$TMP/err")"
	fi
	wait $rpid
	check_eq "cgroup v2: the session ends well" 0 "$?"
	[ -z "$cg" ] || [ ! -d "/sys/fs/cgroup$cg" ] && ok "cgroup v2: its cgroup is removed afterwards" ||
		not_ok "cgroup v2: its cgroup is removed afterwards" "$cg"
else
	skip "cgroup v2 limits" "/sys/fs/cgroup is not cgroup v2 here"
fi
check_eq "nothing is left in the run directory" "" "$(ls -A "$BULKHEAD_RUNDIR" 2> /dev/null)"
plan_done
