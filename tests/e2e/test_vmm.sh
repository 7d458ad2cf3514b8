#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: bulkhead-vmm's Linux machine (--machine) seen from inside freestanding test
# guests on this host's KVM: boot registers and zero page, CPUID and N vCPUs with their APIC
# IDs, the 8250 byte-exact and its interrupt, i8042 reset and triple-fault statuses; ring
# restarts of a virtio-vsock device against bulkhead-vsock (QueueReady 0 -> 1, reset and
# re-initialisation, reset in mid-stream); --timeout-ms whatever a vCPU waits on (a console
# nobody reads, a back end that stopped answering).
. "$(dirname "$0")/lib.sh"

VMM=$BIN/bulkhead-vmm
GUESTS=$LIBDIR/guests

if [ ! -e /dev/kvm ]; then
	skip "bulkhead-vmm machine tests" "no /dev/kvm on this host (tests/nested runs this suite inside L1)"
	plan_done; exit 0
fi
for g in zeropage cpus uart reset triple flood vsock; do
	if [ ! -f "$GUESTS/$g.bin" ] || [ ! -x "$VMM" ]; then
		skip "bulkhead-vmm machine tests" "bulkhead-vmm or $g.bin not built (run make)"
		plan_done; exit 0
	fi
done

# vmm GUEST [ARGS...]: runs a test guest with the Linux machine; $rc, $TMP/out, $TMP/err.
vmm() {
	g=$1; shift
	"$VMM" --test-guest "$GUESTS/$g.bin" --machine --timeout-ms 30000 "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
}
# expect NAME WANT_RC: rc matches, else the guest's verdict and stderr as details.
expect() {
	if [ "$rc" -eq "$2" ]; then ok "$1"
	else not_ok "$1" "exit status $rc, want $2" "stdout: $(head -c 300 "$TMP/out")" "stderr: $(cat "$TMP/err")"; fi
}

# --- boot state: registers, zero page, e820, command line, initrd, MP table -------------------
printf 'BULKHEAD-RD: an initrd the guest recognises\n' > "$TMP/rd"
vmm zeropage --mem 64 --cmdline "bulkhead zeropage test" --initrd "$TMP/rd"
expect "zeropage: boot registers, e820, cmdline, initrd and MP table as documented" 0
check_eq "zeropage: guest saw the initrd's exact size" "zeropage: ok initrd_size=$(wc -c < "$TMP/rd")" "$(cat "$TMP/out")"
vmm zeropage --mem 64 --cmdline "another command line" --initrd "$TMP/rd"
check_eq "zeropage: a different command line is noticed (check 13)" 13 "$rc"
vmm zeropage --mem 96 --cmdline "bulkhead zeropage test" --initrd "$TMP/rd"
check_eq "zeropage: a different RAM size is noticed in e820 (check 12)" 12 "$rc"

# --- vCPUs and CPUID ------------------------------------------------------------------------
for n in 1 3 8; do
	vmm cpus --cpus $n
	expect "cpus: $n vCPUs each see their own APIC ID (CPUID 1, 0xb, LAPIC) and the topology" 0
	check_eq "cpus: $n vCPUs reported" "cpus: $n ok" "$(cat "$TMP/out")"
done
"$VMM" --test-guest "$GUESTS/cpus.bin" --machine --cpus 33 > /dev/null 2> "$TMP/err"
check_eq "--cpus 33 is refused with 125" 125 "$?"

# --- 8250 UART ------------------------------------------------------------------------------
vmm uart
expect "uart: registers, loopback, FIFO probe and THRE interrupt on IRQ 4" 0
{
	printf 'uart bytes:'
	i=0
	while [ $i -lt 256 ]; do printf "\\$(printf %03o $i)"; i=$((i + 1)); done
	printf '\nuart: irq ok\n'
} > "$TMP/want"
cmp -s "$TMP/want" "$TMP/out" && ok "uart: all 256 byte values reach stdout unchanged" ||
	not_ok "uart: all 256 byte values reach stdout unchanged" "$(cmp "$TMP/want" "$TMP/out" 2>&1)"

# --- reset and shutdown -----------------------------------------------------------------------
vmm reset
check_eq "reset: i8042 0xfe ends a test guest with 106" 106 "$rc"
grep -q 'guest requested a reset (i8042)' "$TMP/err" && ok "reset: one stderr line says so" ||
	not_ok "reset: one stderr line says so" "$(cat "$TMP/err")"
vmm triple
check_eq "triple fault with the irqchip present still exits 101" 101 "$rc"
triple_line "triple fault with the irqchip present"

# --- virtio-vsock ring restarts, in a real guest, against the real bulkhead-vsock --------------
# (tests/e2e/test_vsock_restart.sh runs the same driver code without KVM.)
VS=$BIN/bulkhead-vsock
PROBE=$BUILD/tests/vsock-restart-probe
if [ -x "$VS" ] && [ -x "$PROBE" ]; then
	mkdir -p "$TMP/v"
	"$VS" --socket "$TMP/vs.sock" --guest-cid 3 --uds-path "$TMP/v/vsock.sock" -v 2> "$TMP/vs.err" &
	vspid=$!
	"$PROBE" serve "$TMP/v/vsock.sock" &
	srvpid=$!
	wait_socket "$TMP/vs.sock" 5
	"$VMM" --test-guest "$GUESTS/vsock.bin" --machine --timeout-ms 120000 \
		--virtio-vsock "$TMP/vs.sock,cid=3" > "$TMP/out" 2> "$TMP/err" < /dev/null &
	vmmpid=$!
	# While the guest sits in its idle phase (device reset, every queue notified), the back
	# end must not spin: less than a quarter of one CPU over a second.
	i=0; while ! grep -q '^vsock: idle' "$TMP/out" && kill -0 $vmmpid 2> /dev/null && [ $i -lt 1200 ]; do
		sleep 0.1; i=$((i + 1))
	done
	t0=$(awk '{ print $14 + $15 }' "/proc/$vspid/stat" 2> /dev/null)
	sleep 1
	t1=$(awk '{ print $14 + $15 }' "/proc/$vspid/stat" 2> /dev/null)
	wait $vmmpid; rc=$?
	expect "vsock: traffic, QueueReady 0 -> 1, reset and reset-while-busy, each followed by traffic" 0
	check_eq "vsock: every scenario reported" "vsock: basic ok
vsock: toggle ok
vsock: reset ok
vsock: reset-busy ok
vsock: idle" "$(cat "$TMP/out")"
	hz=$(getconf CLK_TCK 2> /dev/null || echo 100)
	if [ -n "$t0" ] && [ -n "$t1" ] && [ $(( (t1 - t0) * 4 )) -lt "$hz" ]; then
		ok "vsock: back end idle after a reset and notifies ($((t1 - t0)) of $hz ticks)"
	else
		not_ok "vsock: back end idle after a reset and notifies" "ticks: ${t0:-?} -> ${t1:-?} of $hz"
	fi
	wait $vspid
	check_eq "vsock: back end ends cleanly with its front end" 0 "$?"
	grep -o 'requests [0-9]*' "$TMP/vs.err" | grep -qx 'requests 0' &&
		ok "vsock: no front-end request refused" || not_ok "vsock: no front-end request refused" "$(cat "$TMP/vs.err")"
	kill $srvpid 2> /dev/null; wait $srvpid 2> /dev/null
else
	skip "vsock ring restarts in a guest" "bulkhead-vsock or $PROBE not built (make test)"
fi

# --- --timeout-ms holds whatever a vCPU waits on ------------------------------------------------
# A console nobody reads: stdout is a pipe already full (16 pages written, its one reader, this
# shell, never reads), so the VMM's first console write would block; the guest floods it.
: > "$TMP/out" # (its output goes to the pipe; nothing to show)
for mode in test --machine; do
	m=; [ $mode = --machine ] && m=--machine
	rm -f "$TMP/fifo"; mkfifo "$TMP/fifo"
	exec 3<> "$TMP/fifo"
	dd if=/dev/zero bs=4096 count=16 > "$TMP/fifo" 2> /dev/null
	timeout -s KILL 60 "$VMM" --test-guest "$GUESTS/flood.bin" $m --timeout-ms 2000 \
		> "$TMP/fifo" 2> "$TMP/err" < /dev/null 3<&-
	rc=$?
	exec 3<&-
	expect "flood ($mode): --timeout-ms ends a run whose console nobody reads (124)" 124
done
# The same with stderr on that full pipe too: the timeout's own line cannot hold up the stop.
rm -f "$TMP/fifo"; mkfifo "$TMP/fifo"
exec 3<> "$TMP/fifo"
dd if=/dev/zero bs=4096 count=16 > "$TMP/fifo" 2> /dev/null
timeout -s KILL 60 "$VMM" --test-guest "$GUESTS/flood.bin" --timeout-ms 2000 > "$TMP/fifo" 2>&1 \
	< /dev/null 3<&-
rc=$?
exec 3<&-
: > "$TMP/err"
expect "flood, stdout and stderr nobody reads: --timeout-ms still ends the run (124)" 124
# Started with stdout and stderr closed: /dev/null takes their place (lib/stdfds.c). Before,
# the first eventfd took descriptor 1, the guest's console bytes set its counter, both threads
# spun and --timeout-ms no longer held.
timeout -s KILL 60 "$VMM" --test-guest "$GUESTS/flood.bin" --timeout-ms 2000 >&- 2>&- < /dev/null
rc=$?
: > "$TMP/err"
expect "flood with stdout and stderr closed: --timeout-ms still ends the run (124)" 124
# A back end that stops answering at DRIVER_OK (the vCPU waits for SET_FEATURES' ack).
MUTE=$BUILD/tests/vhost-user-mute
if [ -x "$MUTE" ]; then
	"$MUTE" "$TMP/mute.sock" SET_FEATURES > "$TMP/mute.out" &
	mpid=$!
	wait_socket "$TMP/mute.sock" 5
	timeout -s KILL 60 "$VMM" --test-guest "$GUESTS/vsock.bin" --machine --cmdline vsock=init \
		--virtio-vsock "$TMP/mute.sock,cid=3" --timeout-ms 2000 > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
	expect "a back end silent at DRIVER_OK: --timeout-ms still ends the run (124)" 124
	check_eq "  ... the back end went silent where asked" "silent at SET_FEATURES" "$(cat "$TMP/mute.out")"
	grep -q 'back end' "$TMP/err" && not_ok "  ... and the VM's own end blames no back end" "$(cat "$TMP/err")" ||
		ok "  ... and the VM's own end blames no back end"
	kill $mpid 2> /dev/null; wait $mpid 2> /dev/null
else
	skip "a silent back end and --timeout-ms" "$MUTE not built (make test)"
fi

# --- Linux-mode refusals: one line each, 125, before any guest runs --------------------------
"$VMM" --kernel "$TMP/rd" > /dev/null 2> "$TMP/err"
check_eq "a kernel that is neither ELF nor bzImage exits 125" 125 "$?"
grep -q 'neither an ELF vmlinux nor a bzImage' "$TMP/err" && [ "$(wc -l < "$TMP/err")" -eq 1 ] &&
	ok "  ... with one line saying so" || not_ok "  ... with one line saying so" "$(cat "$TMP/err")"
if [ -f "$LIBDIR/vmlinux" ]; then
	"$VMM" --kernel "$LIBDIR/vmlinux" --mem 8 > /dev/null 2> "$TMP/err"
	check_eq "vmlinux in 8 MiB of RAM is refused with 125" 125 "$?"
	grep -q 'does not fit in guest RAM' "$TMP/err" && ok "  ... naming the reason" ||
		not_ok "  ... naming the reason" "$(cat "$TMP/err")"
	head -c 300000 "$LIBDIR/vmlinux" > "$TMP/trunc"
	"$VMM" --kernel "$TMP/trunc" > /dev/null 2> "$TMP/err"
	check_eq "a truncated vmlinux is refused with 125" 125 "$?"
else
	skip "Linux-mode refusals with the real vmlinux" "no vmlinux built"
fi
if [ -f "$LIBDIR/bzImage" ]; then
	head -c 4000 "$LIBDIR/bzImage" > "$TMP/trunc"
	"$VMM" --kernel "$TMP/trunc" --mem 64 > /dev/null 2> "$TMP/err"
	check_eq "a truncated bzImage is refused with 125" 125 "$?"
fi

plan_done
