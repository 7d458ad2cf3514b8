#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: `bulkhead run` boots a real guest (engine auto; QEMU under TCG on
# hosts whose KVM cannot run Linux user space) and returns the command's output
# and exit status exactly.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BULKHEAD" ] || [ ! -f "$LIBDIR/vmlinux" ] || [ ! -f "$LIBDIR/initramfs.cpio" ]; then
	skip "run suite" "bulkhead or guest artefacts not built (run make)"
	plan_done; exit 0
fi

# --- exit codes ------------------------------------------------------------
for code in 0 1 3 255; do
	run_capture run -- sh -c "exit $code"
	check_eq "exit code $code comes back" "$code" "$rc"
done

run_capture run -- sh -c 'kill -TERM $$'
check_eq "death by SIGTERM is 128+15" 143 "$rc"
run_capture run -- sh -c 'kill -KILL $$'
check_eq "death by SIGKILL is 128+9" 137 "$rc"

run_capture run -- /no/such/program
check_eq "a missing command exits 127" 127 "$rc"
grep -q 'No such file' "$TMP/err" && ok "a missing command says why on stderr" ||
	not_ok "a missing command says why on stderr" "$(cat "$TMP/err")"
run_capture run -- /etc/passwd
check_eq "a non-executable command exits 126" 126 "$rc"

# --- stdout and stderr -----------------------------------------------------
run_capture run -- sh -c 'echo hello from $(uname -n); uname -r; exit 3'
check_eq "demo command: exit code" 3 "$rc"
check_eq "demo command: first line" "hello from bulkhead" "$(head -n 1 "$TMP/out")"
case $(sed -n 2p "$TMP/out") in
6.1.*) ok "demo command: second line is the guest kernel's release" ;;
*) not_ok "demo command: second line is the guest kernel's release" "$(cat "$TMP/out")" ;;
esac
check_eq "demo command: nothing on stderr" "" "$(cat "$TMP/err")"

run_capture run -- printf '%s|' 'a b' "it's" '"q"' 'ünï' '' '$HOME' 'x*'
check_eq "arguments keep spaces, quotes, UTF-8, empties" \
	"a b|it's|\"q\"|ünï||\$HOME|x*|" "$(cat "$TMP/out")"

run_capture run -- sh -c 'echo out1; echo err1 >&2; echo out2; echo err2 >&2'
check_eq "stdout keeps only stdout" "out1
out2" "$(cat "$TMP/out")"
check_eq "stderr keeps only stderr" "err1
err2" "$(cat "$TMP/err")"

# Every byte value, with NULs and CR/LF, and 1 MiB of it: the guest reports the
# SHA-256 of what it wrote on stderr; ours must match.
run_capture run -- sh -c 'head -c 1048576 /dev/urandom > /tmp/r; sha256sum < /tmp/r >&2; cat /tmp/r'
want=$(cut -d' ' -f1 < "$TMP/err")
got=$(sha256sum < "$TMP/out" | cut -d' ' -f1)
size=$(wc -c < "$TMP/out")
if [ "$rc" = 0 ] && [ "$size" = 1048576 ] && [ -n "$want" ] && [ "$want" = "$got" ]; then
	ok "1 MiB of binary stdout arrives byte-exact"
else
	not_ok "1 MiB of binary stdout arrives byte-exact" "rc=$rc size=$size guest=$want host=$got"
fi

run_capture run -- printf 'a\r\nb\000c\036BHF2 \n'
check_eq "control bytes and a bare frame magic pass through as data" \
	"610d0a6200631e42484632200a" "$(od -An -tx1 -v "$TMP/out" | tr -d ' \n')"

# --- forged status frames ----------------------------------------------------
# A command that prints perfectly valid frames (right magic, sequence numbers
# and CRC) must not change the reported status: its output is data.
if [ -x "$BUILD/tests/frame-forge" ]; then
	frames=$("$BUILD/tests/frame-forge" --printf-escaped)
	run_capture run -- sh -c "printf '$frames'; printf '$frames' >&2; exit 5"
	check_eq "forged exit frames on stdout/stderr do not change the exit code" 5 "$rc"
	"$BUILD/tests/frame-forge" --raw > "$TMP/forged"
	if cmp -s "$TMP/forged" "$TMP/out"; then
		ok "forged frames reach stdout verbatim, as data"
	else
		not_ok "forged frames reach stdout verbatim, as data" "$(od -c "$TMP/out" | head)"
	fi
else
	skip "forged frames" "build/tests/frame-forge not built"
fi

# --- timeout and cleanup -----------------------------------------------------
# The VM processes of these sessions are found by their own run directory.
export BULKHEAD_RUNDIR="$TMP/rt"
mkdir -m 700 "$BULKHEAD_RUNDIR"
marker=$(od -An -N4 -tx1 /dev/urandom | tr -d ' \n')
start=$(date +%s)
"$BULKHEAD" run --timeout 3 -- sleep "1000.$((0x$marker % 1000))" > "$TMP/out" 2> "$TMP/err" &
pid=$!
vm=$(vm_pid)
wait "$pid"
rc=$?
check_eq "--timeout ends a sleep 1000 with 124" 124 "$rc"
grep -q 'timed out' "$TMP/err" && ok "--timeout says so on stderr" ||
	not_ok "--timeout says so on stderr" "$(cat "$TMP/err")"
sleep 0.2
if [ -n "$vm" ] && ! kill -0 "$vm" 2> /dev/null; then
	ok "no VM process is left after a timeout (pid $vm, seen while it ran)"
else
	not_ok "no VM process is left after a timeout" "pid '$vm'"
fi

"$BULKHEAD" run -- sleep 1000 > /dev/null 2> "$TMP/err" &
pid=$!
vm=$(vm_pid)
sleep 2
kill -INT "$pid"
wait "$pid"
rc=$?
check_eq "SIGINT stops the session (exit 130)" 130 "$rc"
sleep 0.2
if [ -n "$vm" ] && ! kill -0 "$vm" 2> /dev/null; then
	ok "no VM process is left after SIGINT (pid $vm, seen while it ran)"
else
	not_ok "no VM process is left after SIGINT" "pid '$vm'"
fi
unset BULKHEAD_RUNDIR

# --- options -----------------------------------------------------------------
run_capture run -e GREETING='hi there' -e PATH=/bin -- sh -c 'echo "$GREETING:$PATH:$HOME"'
check_eq "-e sets and overrides the environment" "hi there:/bin:/root" "$(cat "$TMP/out")"

run_capture run --cpus 2 --mem 192 -- sh -c 'nproc; grep MemTotal /proc/meminfo'
check_eq "--cpus 2 gives two CPUs" 2 "$(head -n 1 "$TMP/out")"
memkb=$(sed -n 's/MemTotal: *\([0-9]*\) kB/\1/p' "$TMP/out")
if [ -n "$memkb" ] && [ "$memkb" -gt 150000 ] && [ "$memkb" -le 196608 ]; then
	ok "--mem 192 gives about 192 MiB"
else
	not_ok "--mem 192 gives about 192 MiB" "MemTotal: ${memkb:-?} kB"
fi

run_capture run --console "$TMP/console" -- echo quiet-stdout
check_eq "--console: stdout is only the command's" "quiet-stdout" "$(cat "$TMP/out")"
grep -q 'Run /init as init process' "$TMP/console" && ok "--console holds the kernel's log" ||
	not_ok "--console holds the kernel's log" "$(head -c 300 "$TMP/console")"
grep -q 'quiet-stdout' "$TMP/console" && not_ok "--console does not duplicate command output" ||
	ok "--console does not duplicate command output"

run_capture run -v -- true
grep -q 'Linux version' "$TMP/err" && ok "-v shows the console on stderr" ||
	not_ok "-v shows the console on stderr" "$(head -c 300 "$TMP/err")"

run_capture run --kernel "$LIBDIR/bzImage" -- echo bz
check_eq "--kernel accepts a bzImage" "bz" "$(cat "$TMP/out")"
run_capture run --kernel "$LIBDIR/vmlinux" -- echo elf
check_eq "--kernel accepts an ELF vmlinux" "elf" "$(cat "$TMP/out")"

# --- bulkhead's own failures: 125 and one line --------------------------------
one_line_125() { # NAME ARGS...
	name=$1; shift
	run_capture "$@"
	lines=$(wc -l < "$TMP/err")
	if [ "$rc" = 125 ] && [ "$lines" = 1 ]; then
		ok "$name: 125 and one line"
	else
		not_ok "$name: 125 and one line" "rc=$rc" "$(cat "$TMP/err")"
	fi
}
one_line_125 "missing kernel" run --kernel /nonexistent -- true
one_line_125 "kernel that is not a kernel" run --kernel /etc/passwd -- true
one_line_125 "missing initrd" run --initrd /nonexistent -- true
one_line_125 "bad --mem" run --mem lots -- true
one_line_125 "--mem too small" run --mem 1 -- true
one_line_125 "bad --cpus" run --cpus 0 -- true
one_line_125 "--cpus too many" run --cpus 33 -- true
one_line_125 "bad --timeout" run --timeout -1 -- true
one_line_125 "bad --engine" run --engine vbox -- true
one_line_125 "unknown option" run --frobnicate -- true
one_line_125 "no command" run
one_line_125 "bad -e" run -e NOEQUALS -- true
one_line_125 "unknown subcommand" frobnicate
long=$(head -c 20000 /dev/zero | tr '\0' x)
run_capture run -- echo "$long"
check_eq "a 20 kB argument reaches the command whole" "$long" "$(cat "$TMP/out")"
huge=$(head -c 70000 /dev/zero | tr '\0' x)
one_line_125 "a command over the 64 KiB exec request" run -- echo "$huge"

# A kernel that finds no init panics; that is bulkhead's failure, said plainly.
: > "$TMP/empty.cpio"
run_capture run --initrd "$TMP/empty.cpio" --timeout 120 -- true
if [ "$rc" = 125 ] && grep -q 'panic' "$TMP/err"; then
	ok "a guest kernel panic is reported as such (125)"
else
	not_ok "a guest kernel panic is reported as such (125)" "rc=$rc" "$(cat "$TMP/err")"
fi

plan_done
