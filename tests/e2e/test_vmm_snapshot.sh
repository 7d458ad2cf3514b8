#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: bulkhead-vmm saves a running VM on SIGUSR1 (--snapshot-fd) and another
# bulkhead-vmm process carries it on (--restore-fd). tests/guests/snapshot.c works on every
# vCPU with its state in registers, an SSE register and RAM; a saved and restored run must
# print the result an uninterrupted one prints. A snapshot cut short, damaged in its state or
# RAM, restored with another RAM size or vCPU count, readable by others or owned by another
# user is refused with one line and nothing runs. A save that cannot be written lets the
# guest run on. The save runs under the allow-lists, and the restoring VMM is filtered as a
# booting one is. Needs KVM: tests/nested runs it inside L1. (The file format's own
# refusals are tests/unit/test_vmm_snapshot.c.)
. "$(dirname "$0")/lib.sh"

VMM=$BIN/bulkhead-vmm
G=$LIBDIR/guests/snapshot.bin

if [ ! -e /dev/kvm ]; then
	skip "bulkhead-vmm snapshots" "no /dev/kvm on this host (tests/nested runs this suite inside L1)"
	plan_done; exit 0
fi
if [ ! -x "$VMM" ] || [ ! -f "$G" ]; then
	skip "bulkhead-vmm snapshots" "bulkhead-vmm or snapshot.bin not built (run make)"
	plan_done; exit 0
fi
umask 077

# result FILE: the guest's result line.
result() { grep '^snapshot: result ' "$1"; }

# save CPUS FILE NAME: starts the guest with --snapshot-fd on FILE, sends SIGUSR1 once it
# printed "ready", waits. $rc, $TMP/NAME.out, $TMP/NAME.err.
save() {
	: > "$TMP/$3.out"
	"$VMM" --test-guest "$G" --machine --cpus "$1" --timeout-ms 120000 --snapshot-fd 3 \
		3<> "$2" > "$TMP/$3.out" 2> "$TMP/$3.err" < /dev/null &
	pid=$!
	i=0
	while ! grep -q '^snapshot: ready' "$TMP/$3.out" && [ $i -lt 3000 ]; do
		sleep 0.01; i=$((i + 1))
	done
	kill -USR1 "$pid"
	wait "$pid"; rc=$?
}

# restore FILE NAME [ARGS...]: $rc, $TMP/NAME.out, $TMP/NAME.err.
restore() {
	f=$1; name=$2; shift 2
	"$VMM" --restore-fd 3 --timeout-ms 120000 "$@" 3< "$f" > "$TMP/$name.out" 2> "$TMP/$name.err" < /dev/null
	rc=$?
}

for cpus in 1 2; do
	"$VMM" --test-guest "$G" --machine --cpus $cpus --timeout-ms 120000 > "$TMP/ref$cpus.out" 2> "$TMP/ref$cpus.err" < /dev/null
	check_eq "reference run, $cpus vCPU(s): the guest's own end (7)" 7 "$?"
	ref=$(result "$TMP/ref$cpus.out")
	[ -n "$ref" ] && ok "reference run, $cpus vCPU(s): $ref" || not_ok "reference run, $cpus vCPU(s) prints a result" "$(cat "$TMP/ref$cpus.out" "$TMP/ref$cpus.err")"

	save $cpus "$TMP/snap$cpus" save$cpus
	check_eq "SIGUSR1 mid-work, $cpus vCPU(s): saved, exit 108" 108 "$rc"
	grep -q "snapshot: saved $cpus vCPU" "$TMP/save$cpus.err" && ok "the save says what it saved" ||
		not_ok "the save says what it saved" "$(cat "$TMP/save$cpus.err")"
	grep -q '^snapshot: result' "$TMP/save$cpus.out" && not_ok "saved before the guest's end" "$(cat "$TMP/save$cpus.out")" ||
		ok "saved before the guest's end (no result yet)"
	check_eq "the snapshot is mode 0600" 600 "$(stat -c %a "$TMP/snap$cpus")"

	restore "$TMP/snap$cpus" restore$cpus
	check_eq "restored in a new process, $cpus vCPU(s): the guest ends itself (7)" 7 "$rc"
	check_eq "restored: the same result as the uninterrupted run" "$ref" "$(result "$TMP/restore$cpus.out")"
	grep -q 'snapshot: ready' "$TMP/restore$cpus.out" && not_ok "restored: it continues, it does not start over" "$(cat "$TMP/restore$cpus.out")" ||
		ok "restored: it continues, it does not start over"
	tenths=$(cat "$TMP/save$cpus.out" "$TMP/restore$cpus.out" | grep -c '^snapshot: tenth')
	check_eq "restored: the tenths before and after add up to the whole work" 10 "$tenths"
done

# A request before the VM runs waits for it (SIGUSR1 is blocked from main's start), and
# the snapshot of a guest that has not run yet restores to a whole run.
"$VMM" --test-guest "$G" --machine --cpus 2 --timeout-ms 120000 --snapshot-fd 3 \
	3<> "$TMP/early" > "$TMP/early.out" 2> "$TMP/early.err" < /dev/null &
pid=$!
sleep 0.1
kill -USR1 "$pid"
wait "$pid"
check_eq "SIGUSR1 at once after start: kept until the VM runs, then saved (108)" 108 "$?"
restore "$TMP/early" early_r
check_eq "... and that snapshot restores to the whole run's result" "$(result "$TMP/ref2.out")" "$(result "$TMP/early_r.out")"

# One snapshot, started twice: each start is the whole VM again.
restore "$TMP/snap2" again
check_eq "a snapshot restored a second time: the same result" "$(result "$TMP/ref2.out")" "$(result "$TMP/again.out")"

# --- Linux: its timers, interrupts and clocks across a save ----------------------------------
# tests/guest-tools/snap_init.c is /init: ticks 50 ms apart (LAPIC timer interrupts), each saying
# whether CLOCK_MONOTONIC went forward; saved after a few ticks, restored a second later.
INIT=$(cd "$BUILD/tests" && pwd)/snap-init
if [ -x "$INIT" ] && [ -f "$LIBDIR/vmlinux" ] && [ -x "$LIBDIR/gen_init_cpio" ]; then
	printf 'dir /dev 0755 0 0\nnod /dev/console 0600 0 0 c 5 1\nfile /init %s 0755 0 0\n' "$INIT" > "$TMP/list"
	"$LIBDIR/gen_init_cpio" "$TMP/list" > "$TMP/snapinit.cpio"
	CMDLINE="console=ttyS0 8250.nr_uarts=1 panic=-1 reboot=k rdinit=/init tsc=reliable no_timer_check quiet"
	linux() {
		"$VMM" --kernel "$LIBDIR/vmlinux" --initrd "$TMP/snapinit.cpio" --cmdline "$CMDLINE" \
			--mem 256 --cpus 2 --timeout-ms 120000 "$@"
	}
	linux > "$TMP/lref.out" 2> "$TMP/lref.err" < /dev/null
	check_eq "Linux, uninterrupted: ends by its reboot (0)" 0 "$?"
	lsum=$(grep '^snapinit: done' "$TMP/lref.out")
	check_eq "Linux, uninterrupted: 30 ticks, the clock always forward" 30 "$(grep -c '^snapinit: tick [0-9]* mono-ok' "$TMP/lref.out")"
	# Not through linux(): $! must be the VMM's own pid, not a subshell's.
	"$VMM" --kernel "$LIBDIR/vmlinux" --initrd "$TMP/snapinit.cpio" --cmdline "$CMDLINE" \
		--mem 256 --cpus 2 --timeout-ms 120000 --snapshot-fd 3 \
		3<> "$TMP/lsnap" > "$TMP/lsave.out" 2> "$TMP/lsave.err" < /dev/null &
	pid=$!
	i=0
	while ! grep -q '^snapinit: tick 5 ' "$TMP/lsave.out" && [ $i -lt 6000 ]; do sleep 0.01; i=$((i + 1)); done
	kill -USR1 "$pid"
	wait "$pid"
	rc=$?
	if [ $rc -eq 108 ]; then ok "Linux, SIGUSR1 after tick 5: saved (108)"
	else not_ok "Linux, SIGUSR1 after tick 5: saved (108)" "exit $rc" "stderr: $(cat "$TMP/lsave.err")" \
		"console: $(tail -c 1500 "$TMP/lsave.out")"; fi
	sed -n 's/^bulkhead-vmm: snapshot: //p' "$TMP/lsave.err" | head -n 1 | sed 's/^/# /'
	sleep 1
	"$VMM" --restore-fd 3 --timeout-ms 120000 3< "$TMP/lsnap" > "$TMP/lrest.out" 2> "$TMP/lrest.err" < /dev/null
	rc=$?
	# (It once timed out in CI, the restored guest silent: say all it and the VMM said.)
	if [ $rc -eq 0 ]; then ok "Linux, restored in a new process a second later: runs to its reboot (0)"
	else not_ok "Linux, restored in a new process a second later: runs to its reboot (0)" "exit $rc" \
		"stderr: $(cat "$TMP/lrest.err")" "console: $(tail -c 1500 "$TMP/lrest.out")" \
		"saved from: $(tail -n 3 "$TMP/lsave.out")"; fi
	check_eq "Linux, restored: the same final state as the uninterrupted run" "$lsum" "$(grep '^snapinit: done' "$TMP/lrest.out")"
	ticks=$(cat "$TMP/lsave.out" "$TMP/lrest.out" | grep -c '^snapinit: tick [0-9]* mono-ok')
	check_eq "Linux, restored: its timer ticks on, 30 in all, the clock never back" 30 "$ticks"
	grep -q '^snapinit: ready' "$TMP/lrest.out" && not_ok "Linux, restored: it continues, no second boot" "$(head -c 300 "$TMP/lrest.out")" ||
		ok "Linux, restored: it continues, no second boot"

	# --- vsock across a save: the rings move to a new bulkhead-vsock; the guest's
	# connection of before is reset (the transport reset event), a new one works.
	FDC=$(cd "$BUILD/tests" && pwd)/fd-connect
	# vsockd N: bulkhead-vsock on $TMP/vsN.sock, host programs at $TMP/vsN_PORT.
	vsockd() {
		"$BIN/bulkhead-vsock" --socket "$TMP/vs$1.sock" --guest-cid 3 --uds-path "$TMP/vs$1" 2> "$TMP/vsockd$1.err" &
		pids="$pids $!"
		wait_socket "$TMP/vs$1.sock" 10 $! || not_ok "bulkhead-vsock $1 listens" "$(cat "$TMP/vsockd$1.err")"
	}
	# client N LINE OUT: connects to the guest's port 5000 through bulkhead-vsock N, sends
	# LINE, keeps the connection HOLD seconds after the answer (in the background).
	client() {
		"$FDC" 3="$TMP/vs$1" -- sh -c "printf 'CONNECT 5000\n$2\n' >&3; head -n 2 <&3 > '$3'; sleep $4" &
		pids="$pids $!"
	}
	# wait_line FILE PATTERN: up to 30 s.
	wait_line() {
		i=0; while ! grep -q "$2" "$1" 2> /dev/null && [ $i -lt 3000 ]; do sleep 0.01; i=$((i + 1)); done
	}
	# vsock_says NAME: the guest's console, the VMM's and bulkhead-vsock's lines, the clients'.
	vsock_says() {
		for f in "$TMP/$1.out" "$TMP/$1.err" "$TMP"/vsockd*.err "$TMP"/c*.out; do
			[ -f "$f" ] && echo "${f##*/}: $(tail -c 600 "$f")"
		done
	}
	# vsock_guest N FILE NAME: the guest serving vsock through bulkhead-vsock N, saved on
	# SIGUSR1 to FILE; $pid is bulkhead-vmm's own (started here, not in a subshell).
	vsock_guest() {
		vsockd "$1"
		"$VMM" --kernel "$LIBDIR/vmlinux" --initrd "$TMP/snapinit.cpio" --cmdline "$CMDLINE vsock" \
			--mem 256 --cpus 2 --timeout-ms 60000 --virtio-vsock "$TMP/vs$1.sock,cid=3" \
			--snapshot-fd 3 3<> "$2" > "$TMP/$3.out" 2> "$TMP/$3.err" < /dev/null &
		pid=$!
	}
	vsock_guest 1 "$TMP/vsnap" vsave
	wait_line "$TMP/vsave.out" '^snapinit: listening'
	client 1 before "$TMP/c1.out" 60
	wait_line "$TMP/c1.out" '^echo: before'
	if [ "$(sed -n 2p "$TMP/c1.out")" = "echo: before" ]; then ok "vsock: the guest answers through the first bulkhead-vsock"
	else not_ok "vsock: the guest answers through the first bulkhead-vsock" "$(vsock_says vsave)"; fi
	kill -USR1 "$pid"
	wait "$pid"
	check_eq "vsock: saved with its connection open (108)" 108 "$?"
	vsockd 2
	"$VMM" --restore-fd 3 --virtio-vsock "$TMP/vs2.sock,cid=3" --timeout-ms 60000 \
		3< "$TMP/vsnap" > "$TMP/vrest.out" 2> "$TMP/vrest.err" < /dev/null &
	pid=$!
	# (The console's lines end in CR LF: the guest's tty adds the CR.)
	wait_line "$TMP/vrest.out" '^snapinit: conn '
	sleep 0.2
	if [ "$(grep '^snapinit: conn ' "$TMP/vrest.out" | head -n 1 | tr -d '\r')" = "snapinit: conn reset" ]; then
		ok "vsock, restored on a new bulkhead-vsock: the old connection is reset in the guest"
	else not_ok "vsock, restored on a new bulkhead-vsock: the old connection is reset in the guest" "$(vsock_says vrest)"; fi
	client 2 quit "$TMP/c2.out" 0
	wait "$pid"
	check_eq "vsock, restored: a new connection is served, and the guest ends (0)" 0 "$?"
	check_eq "vsock, restored: the new connection's answer" "echo: quit" "$(sed -n 2p "$TMP/c2.out")"
	"$VMM" --restore-fd 3 --timeout-ms 30000 3< "$TMP/vsnap" > /dev/null 2> "$TMP/err"
	check_eq "vsock: a snapshot with a vsock device, restored without one: refused (125)" 125 "$?"

	# A save that fails with the rings stopped in the back end: they start again where they
	# stood, and the guest's vsock goes on working (a new connection is served).
	mkdir -p "$TMP/small"
	if mount -t tmpfs -o size=64k tmpfs "$TMP/small" 2> /dev/null; then
		vsock_guest 3 "$TMP/small/vsnap" vfull
		wait_line "$TMP/vfull.out" '^snapinit: listening'
		kill -USR1 "$pid"
		wait_line "$TMP/vfull.err" 'the guest runs on'
		client 3 quit "$TMP/c3.out" 0
		wait "$pid"
		check_eq "vsock, a save that fails (full disk): the guest runs on and ends itself (0)" 0 "$?"
		check_eq "... its vsock device still serves a new connection" "echo: quit" "$(sed -n 2p "$TMP/c3.out")"
		umount "$TMP/small"
	else
		skip "vsock, a save that fails" "cannot mount a small tmpfs here (not root?)"
	fi
	grep -q "virtio devices given are not the snapshot's" "$TMP/err" && ok "... saying the devices differ" ||
		not_ok "... saying the devices differ" "$(cat "$TMP/err")"
else
	skip "Linux across a save" "snap-init, vmlinux or gen_init_cpio not built (make all test-programs)"
fi

# --- refusals: one line, exit 125, no guest output ------------------------------------------
# refused NAME FILE WANT [ARGS...]
refused() {
	what=$1; file=$2; want=$3; shift 3
	restore "$file" refused "$@"
	if [ "$rc" -eq 125 ] && grep -q -- "$want" "$TMP/refused.err" && [ ! -s "$TMP/refused.out" ]; then
		ok "refused: $what ($(head -n 1 "$TMP/refused.err"))"
	else
		not_ok "refused: $what" "exit $rc (want 125), want '$want' on stderr" "stderr: $(cat "$TMP/refused.err")" "stdout: $(head -c 200 "$TMP/refused.out")"
	fi
}
size=$(stat -c %s "$TMP/snap1")
cp "$TMP/snap1" "$TMP/cut"; truncate -s $((size / 2)) "$TMP/cut"
refused "a snapshot cut short" "$TMP/cut" "cut short"
cp "$TMP/snap1" "$TMP/cut"; truncate -s 100 "$TMP/cut"
refused "a snapshot cut inside its header" "$TMP/cut" "cut short"
# flip FILE OFFSET: one byte inverted.
flip() {
	b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((255 - b)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2> /dev/null
}
cp "$TMP/snap1" "$TMP/bad"; flip "$TMP/bad" 4200
refused "a bit flipped in the vCPU state" "$TMP/bad" "damaged (CRC)"
mem_off=$(od -An -tu8 -j 64 -N 8 "$TMP/snap1" | tr -d ' ')
cp "$TMP/snap1" "$TMP/bad"; flip "$TMP/bad" $((mem_off + 1048576 + 40))
refused "a bit flipped in the guest's RAM" "$TMP/bad" "RAM is damaged"
cp "$TMP/snap1" "$TMP/bad"; flip "$TMP/bad" 8
refused "a header changed (the version field)" "$TMP/bad" "header is damaged"
refused "--mem other than the snapshot's" "$TMP/snap1" "16 MiB of RAM, --mem says 32" --mem 32
refused "--cpus other than the snapshot's" "$TMP/snap1" "1 vCPU(s), --cpus says 2" --cpus 2
cp "$TMP/snap1" "$TMP/open"; chmod 644 "$TMP/open"
refused "a snapshot other users can read (0644)" "$TMP/open" "readable or writable by other users"
cp "$TMP/snap1" "$TMP/theirs"; chown 65534 "$TMP/theirs"
refused "a snapshot owned by another user" "$TMP/theirs" "owned by uid 65534"
printf 'not a snapshot at all\n' > "$TMP/junk"
refused "a file that is no snapshot" "$TMP/junk" "cut short\|bad magic"
"$VMM" --restore-fd 3 --test-guest "$G" 3< "$TMP/snap1" > /dev/null 2> "$TMP/err"
check_eq "--restore-fd with --test-guest: a usage error (125)" 125 "$?"

# --- a save that cannot be written: the guest runs on ----------------------------------------
mkdir -p "$TMP/small"
if mount -t tmpfs -o size=64k tmpfs "$TMP/small" 2> /dev/null; then
	save 1 "$TMP/small/snap" full
	check_eq "a save into a full file system fails: the guest runs on to its end (7)" 7 "$rc"
	check_eq "... with the uninterrupted run's result" "$(result "$TMP/ref1.out")" "$(result "$TMP/full.out")"
	grep -q 'snapshot: not saved; the guest runs on' "$TMP/full.err" && ok "... and says the snapshot was not saved" ||
		not_ok "... and says the snapshot was not saved" "$(cat "$TMP/full.err")"
	check_eq "... and leaves an empty file, not half a snapshot" 0 "$(stat -c %s "$TMP/small/snap")"
	umount "$TMP/small"
else
	skip "a save into a full file system" "cannot mount a small tmpfs here (not root?)"
fi

# --- the jail: the restoring VMM is filtered as a booting one --------------------------------
"$VMM" --restore-fd 3 --jail-selftest 3< "$TMP/snap1" > "$TMP/js.out" 2> "$TMP/js.err" < /dev/null
js=$?
check_eq "restoring with --jail-selftest: killed by its own allow-list (SIGSYS) before the guest" 159 "$js"
grep -q 'selftest: vcpu 0: open /etc/passwd: Permission denied' "$TMP/js.err" && [ ! -s "$TMP/js.out" ] &&
	ok "... every vCPU thread of the restored VM is filtered" ||
	not_ok "... every vCPU thread of the restored VM is filtered" "$(cat "$TMP/js.err")"

plan_done
