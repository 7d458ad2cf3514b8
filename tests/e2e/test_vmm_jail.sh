#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end on this host's KVM: bulkhead-vmm's own jail. Every thread runs under its own
# seccomp allow-list from before the first guest instruction (seen from outside in
# /proc/PID/task/*/status, and from inside with --jail-selftest), the guests still work under
# it, and the descriptor options let it run with nothing to open: kernel, initrd, test guest,
# /dev/kvm and the vhost-user back ends all passed as descriptors.
. "$(dirname "$0")/lib.sh"

VMM=$BIN/bulkhead-vmm
GUESTS=$LIBDIR/guests

if [ ! -e /dev/kvm ]; then
	skip "bulkhead-vmm's jail" "no /dev/kvm on this host (tests/nested runs this suite inside L1)"
	plan_done; exit 0
fi
for f in "$VMM" "$GUESTS/uart.bin" "$GUESTS/cpus.bin" "$GUESTS/hello.bin" "$GUESTS/spin.bin" \
	"$GUESTS/zeropage.bin"; do
	if [ ! -e "$f" ]; then
		skip "bulkhead-vmm's jail" "$f not built (run make)"
		plan_done; exit 0
	fi
done

# vmm ARGS...: $rc, $TMP/out, $TMP/err (descriptors given as redirections by the caller).
vmm() {
	"$VMM" "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
}
expect() { # NAME WANT_RC
	if [ "$rc" -eq "$2" ]; then ok "$1"
	else not_ok "$1" "exit status $rc, want $2" "stdout: $(head -c 300 "$TMP/out")" "stderr: $(cat "$TMP/err")"; fi
}
# one_line NAME PATTERN: stderr is exactly one line and matches.
one_line() {
	if [ "$(wc -l < "$TMP/err")" -eq 1 ] && grep -q -- "$2" "$TMP/err"; then ok "$1"
	else not_ok "$1" "want one line matching: $2" "stderr: $(cat "$TMP/err")"; fi
}
# thread_filters PID: "Seccomp:MODE filters:N" for each of PID's own threads. KVM's kernel
# workers (kvm-nx-lpage-recovery) show up in the task list too, but never run user code.
thread_filters() {
	for s in /proc/"$1"/task/*/status; do
		awk '/^Name:/ { n = $2 } /^Seccomp:/ { m = $2 } /^Seccomp_filters:/ { f = $2 }
		     END { if (n == "bulkhead-vmm") print "Seccomp:" m " filters:" f }' "$s" 2> /dev/null
	done
}
# wait_filters PID N: waits (10 s at most) until PID has N threads, each in filter mode with
# exactly one filter (its own; stacked ones would show more); prints what it saw last.
wait_filters() {
	_want=$(i=0; while [ $i -lt "$2" ]; do echo "Seccomp:2 filters:1"; i=$((i + 1)); done)
	i=0
	while [ $i -lt 100 ]; do
		_got=$(thread_filters "$1")
		[ "$_got" = "$_want" ] && break
		sleep 0.1; i=$((i + 1))
	done
	printf '%s\n' "$_got"
}
filters_for() { i=0; while [ $i -lt "$1" ]; do echo "Seccomp:2 filters:1"; i=$((i + 1)); done; }

# --- the guests still work under the allow-lists ------------------------------------------
vmm --test-guest "$GUESTS/hello.bin"
expect "hello (test mode, no irqchip) exits 42 under the allow-lists" 42
check_eq "  ... and prints its line" "hello from a bulkhead test guest" "$(cat "$TMP/out")"
vmm --test-guest "$GUESTS/uart.bin" --machine --timeout-ms 30000
expect "uart: the 8250 and its interrupt (KVM_IRQ_LINE from the vCPU thread) work" 0
check_eq "  ... its last line" "uart: irq ok" "$(tail -n 1 "$TMP/out")"
for n in 2 8; do
	vmm --test-guest "$GUESTS/cpus.bin" --machine --cpus $n --timeout-ms 30000
	check_eq "cpus: $n vCPUs, each under its own list" "cpus: $n ok" "$(cat "$TMP/out")"
done
vmm --test-guest "$GUESTS/spin.bin" --machine --cpus 2 --timeout-ms 200
expect "a timeout still stops every vCPU (kicks: tgkill from the main thread's list)" 124

# --- every thread is filtered, from outside ------------------------------------------------
"$VMM" --test-guest "$GUESTS/spin.bin" --machine --cpus 2 --timeout-ms 20000 > /dev/null 2>&1 &
pid=$!
check_eq "a running VM: main + 2 vCPU threads each have Seccomp: 2, one filter each" \
	"$(filters_for 3)" "$(wait_filters $pid 3)"
kill $pid; wait $pid 2> /dev/null
"$VMM" --test-guest "$GUESTS/spin.bin" --machine --cpus 2 --timeout-ms 20000 --no-seccomp \
	> /dev/null 2>&1 &
pid=$!
sleep 0.3
check_eq "  ... and with --no-seccomp none has (the check can fail)" \
	"$(printf 'Seccomp:0 filters:0\nSeccomp:0 filters:0\nSeccomp:0 filters:0')" "$(thread_filters $pid)"
kill $pid; wait $pid 2> /dev/null

# --- --jail-selftest: from inside ----------------------------------------------------------
vmm --test-guest "$GUESTS/uart.bin" --machine --cpus 2 --jail-selftest
field() { sed -n "s/^selftest: $1: *//p" "$TMP/err" | head -n 1; }
check_eq "selftest: vCPU 0's thread cannot open /etc/passwd (its own filter)" "Permission denied" \
	"$(field 'vcpu 0: open \/etc\/passwd')"
check_eq "selftest: vCPU 1's thread cannot either" "Permission denied" "$(field 'vcpu 1: open \/etc\/passwd')"
check_eq "selftest: the main thread cannot open /etc/passwd" "Permission denied" \
	"$(field 'open \/etc\/passwd')"
check_eq "selftest: socket(AF_INET) fails" "Address family not supported by protocol" \
	"$(field 'socket AF_INET')"
if [ "$rc" -eq 159 ] && ! grep -q 'still alive' "$TMP/err"; then
	ok "selftest: a call outside the list kills it with SIGSYS (status 128+31)"
else
	not_ok "selftest: a call outside the list kills it with SIGSYS (status 128+31)" "rc=$rc" "$(tail -n 3 "$TMP/err")"
fi
check_eq "selftest: killed before the guest's first instruction (no console byte)" 0 "$(wc -c < "$TMP/out")"
grep -q '^selftest: fds 0 1 2 ' "$TMP/err" && grep -q '^selftest: NoNewPrivs:' "$TMP/err" &&
	ok "selftest: the report before the lists (descriptors, no_new_privs)" ||
	not_ok "selftest: the report before the lists (descriptors, no_new_privs)" "$(head -n 10 "$TMP/err")"
vmm --test-guest "$GUESTS/uart.bin" --machine --jail-selftest --no-seccomp
if [ "$rc" -eq 125 ] && [ "$(field 'vcpu 0: open \/etc\/passwd')" = opened ] && grep -q 'still alive' "$TMP/err"; then
	ok "selftest with --no-seccomp: the same probes succeed, it says so and exits 125"
else
	not_ok "selftest with --no-seccomp: the same probes succeed, it says so and exits 125" "rc=$rc" "$(cat "$TMP/err")"
fi

# --- descriptors instead of paths -----------------------------------------------------------
vmm --test-guest-fd 3 --kvm-fd 4 3< "$GUESTS/hello.bin" 4<> /dev/kvm
expect "--test-guest-fd and --kvm-fd: hello runs from descriptors" 42
printf 'BULKHEAD-RD: an initrd the guest recognises\n' > "$TMP/rd"
vmm --test-guest-fd 3 --machine --mem 64 --cmdline "bulkhead zeropage test" --initrd-fd 5 \
	--kvm-fd 4 3< "$GUESTS/zeropage.bin" 4<> /dev/kvm 5< "$TMP/rd"
expect "--initrd-fd: the zero page guest sees the initrd read from a descriptor" 0
vmm --kernel-fd 3 3< "$TMP/rd"
expect "--kernel-fd: a non-kernel read from the descriptor is refused with 125" 125
one_line "  ... naming the descriptor and the reason" 'kernel descriptor 3: .*neither an ELF vmlinux nor a bzImage'

# An empty root: nothing but the static binary itself, every file passed as a descriptor.
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$TMP/empty"
	cp "$VMM" "$TMP/empty/bulkhead-vmm"
	chroot "$TMP/empty" /bulkhead-vmm --test-guest-fd 3 --kvm-fd 4 --machine --cpus 2 \
		--jail-selftest 3< "$GUESTS/uart.bin" 4<> /dev/kvm > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
	check_eq "empty root: the process sees only its own binary" "bulkhead-vmm" "$(field root)"
	check_eq "empty root: the vCPU's open fails from its filter, not for want of a file" \
		"Permission denied" "$(field 'vcpu 1: open \/etc\/passwd')"
	chroot "$TMP/empty" /bulkhead-vmm --test-guest-fd 3 --kvm-fd 4 --machine \
		3< "$GUESTS/uart.bin" 4<> /dev/kvm > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
	expect "empty root: the uart guest runs to its end from descriptors only" 0
else
	skip "empty root (chroot)" "needs root"
fi

# Bad descriptors: 125 and one line, before any VM exists.
bad() { # NAME PATTERN ARGS... (redirections come from the caller's exec)
	_name=$1 _pat=$2; shift 2
	vmm "$@"
	if [ "$rc" -eq 125 ] && [ "$(wc -l < "$TMP/err")" -eq 1 ] && grep -q -- "$_pat" "$TMP/err"; then
		ok "$_name"
	else
		not_ok "$_name" "rc=$rc, want 125 and one line matching: $_pat" "stderr: $(cat "$TMP/err")"
	fi
}
bad "--kernel-fd 9 (not open) is refused" '--kernel-fd 9: not an open descriptor' --kernel-fd 9
bad "--kernel-fd 2 (stderr) is refused" '--kernel-fd 2: want a descriptor number above 2' --kernel-fd 2
bad "--kvm-fd x is refused" '--kvm-fd x: want a descriptor number above 2' --test-guest-fd 3 --kvm-fd x 3< "$GUESTS/hello.bin"
bad "--kvm-fd 99999999999 is refused" 'want a descriptor number above 2' --test-guest-fd 3 --kvm-fd 99999999999 3< "$GUESTS/hello.bin"
bad "--kernel-fd on a directory is refused" '--kernel-fd 3: not a regular file' --kernel-fd 3 3< "$TMP"
bad "--kvm-fd on /dev/null is refused" '--kvm-fd 4: not /dev/kvm' --test-guest-fd 3 --kvm-fd 4 3< "$GUESTS/hello.bin" 4< /dev/null
bad "the same descriptor for two options is refused" 'descriptor 3 given to both --kernel-fd N and --initrd-fd N' \
	--kernel-fd 3 --initrd-fd 3 3< "$TMP/rd"
bad "a path and a descriptor for one file are refused" 'not both' --kernel "$TMP/rd" --kernel-fd 3 3< "$TMP/rd"
bad "--virtio-fs fd=N on a file is refused" '--virtio-fs fd=3: not a connected Unix stream socket' \
	--kernel-fd 4 --virtio-fs fd=3,tag=work 3< "$TMP/rd" 4< "$TMP/rd"
bad "two --virtio-fs devices with one tag are refused" 'a tag no other device has' \
	--kernel "$TMP/rd" --virtio-fs "$TMP/a.sock,tag=work" --virtio-fs "$TMP/b.sock,tag=work"
bad "a fifth --virtio-fs is refused" 'given more than 4 times' --kernel "$TMP/rd" \
	--virtio-fs "$TMP/a,tag=a" --virtio-fs "$TMP/b,tag=b" --virtio-fs "$TMP/c,tag=c" \
	--virtio-fs "$TMP/d,tag=d" --virtio-fs "$TMP/e,tag=e"
bad "--virtio-vsock fd=2 is refused" 'want SOCKET,cid=C or fd=N,cid=C' --kernel-fd 4 --virtio-vsock fd=2,cid=3 4< "$TMP/rd"

# --- Linux with virtio-fs and virtio-vsock, in the empty root, everything by descriptor ------
vfsd=/usr/lib/qemu/virtiofsd
if [ ! -f "$LIBDIR/vmlinux" ] || [ ! -x "$vfsd" ] || [ ! -x "$BIN/bulkhead-vsock" ] || [ "$(id -u)" -ne 0 ]; then
	skip "Linux boot under the allow-lists" "needs the vmlinux, $vfsd, bulkhead-vsock and root"
	plan_done; exit 0
fi
root=$TMP/root
mkdir -p "$root/sbin" "$TMP/vs"
printf '#!/bin/sh\necho never runs here\n' > "$root/sbin/probe-init"
chmod 755 "$root/sbin/probe-init"
"$vfsd" --socket-path="$TMP/fs.sock" -o source="$root" -o sandbox=namespace -o cache=none \
	-o log_level=warn > "$TMP/vfsd.log" 2>&1 &
vpid=$!
"$BIN/bulkhead-vsock" --socket "$TMP/vsock.sock" --guest-cid 3 --uds-path "$TMP/vs/vsock.sock" \
	> "$TMP/vsock.log" 2>&1 &
spid=$!
i=0
while { [ ! -S "$TMP/fs.sock" ] || [ ! -S "$TMP/vsock.sock" ]; } && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
quirks=""
"$BULKHEAD" doctor 2> /dev/null | grep -q '^guest kernel mode: emulated' &&
	quirks="noxsave clearcpuid=smap,smep,pku,umip,popcnt"
# fd-connect (tests/tools/fd_connect.c) connects both sockets onto descriptors 5 and 6, then
# execs, as the launcher hands the VMM its back ends.
"$BUILD/tests/fd-connect" 5="$TMP/fs.sock" 6="$TMP/vsock.sock" -- \
	timeout 900 chroot "$TMP/empty" /bulkhead-vmm --kernel-fd 3 --kvm-fd 4 --mem 256 \
	--cmdline "console=ttyS0 panic=-1 reboot=k $quirks rootfstype=virtiofs root=work rw init=/sbin/probe-init" \
	--virtio-fs fd=5,tag=work --virtio-vsock fd=6,cid=3 \
	3< "$LIBDIR/vmlinux" 4<> /dev/kvm > "$TMP/console" 2> "$TMP/vmm.err" < /dev/null &
lpid=$!
# timeout(1) forks: the VMM is its child. Main, the vCPU and the back-end watcher.
i=0
while [ -z "${vmm_pid:-}" ] && [ $i -lt 100 ]; do vmm_pid=$(pgrep -P $lpid bulkhead-vmm); sleep 0.1; i=$((i + 1)); done
check_eq "Linux boot: main, vCPU and back-end watcher threads each have their own filter" \
	"$(filters_for 3)" "$(wait_filters "${vmm_pid:-0}" 3)"
wait $lpid
rc=$?
kill $vpid $spid 2> /dev/null
wait $vpid $spid 2> /dev/null
grep -q 'VFS: Mounted root (virtiofs filesystem)' "$TMP/console" &&
	ok "Linux boot: the kernel mounts virtio-fs (vhost-user from the vCPU thread under its list)" ||
	not_ok "Linux boot: the kernel mounts virtio-fs (vhost-user from the vCPU thread under its list)" \
		"rc=$rc" "$(tail -n 5 "$TMP/console")" "$(cat "$TMP/vmm.err")"
n=$(grep -c 'virtio-mmio: Registering device virtio-mmio\.[01]' "$TMP/console")
check_eq "Linux boot: both virtio devices (fs, vsock) registered" 2 "$n"
grep -q 'Run /sbin/probe-init as init process' "$TMP/console" &&
	ok "Linux boot: reaches its init on the share" ||
	not_ok "Linux boot: reaches its init on the share" "$(tail -n 5 "$TMP/console")"
check_eq "Linux boot: bulkhead-vmm ends cleanly (exit 0, teardown under the main thread's list)" 0 "$rc"
plan_done
