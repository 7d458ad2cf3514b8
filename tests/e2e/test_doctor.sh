#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: bulkhead-vmm --test-guest runs the freestanding guests of tests/guests/ on this
# host's KVM with their documented exit statuses (lib/vmm_exit.h), and `bulkhead doctor`
# reports facts consistent with what those probes show.
. "$(dirname "$0")/lib.sh"

VMM=$BIN/bulkhead-vmm
GUESTS=$LIBDIR/guests

if [ ! -e /dev/kvm ]; then
	skip "test guests and doctor probes" "no /dev/kvm on this host (tests/nested runs this suite inside L1)"
	# The doctor must still work (and say why KVM is out) when QEMU is there.
	if [ -x "$BULKHEAD" ]; then
		"$BULKHEAD" doctor > "$TMP/doc" 2> "$TMP/doc.err"
		grep -q '^kvm: not usable' "$TMP/doc" && ok "doctor says KVM is not usable" ||
			not_ok "doctor says KVM is not usable" "$(cat "$TMP/doc")"
	fi
	plan_done; exit 0
fi
if [ ! -x "$VMM" ] || [ ! -f "$GUESTS/hello.bin" ]; then
	skip "test guests and doctor probes" "bulkhead-vmm or test guests not built (run make)"
	plan_done; exit 0
fi

# vmm GUEST [ARGS...]: runs a test guest; sets $rc, files $TMP/out, $TMP/err.
vmm() {
	g=$1; shift
	"$VMM" --test-guest "$GUESTS/$g.bin" --timeout-ms 20000 "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
}
# err_line NAME PATTERN: stderr is exactly one line and matches PATTERN.
err_line() {
	if [ "$(wc -l < "$TMP/err")" -eq 1 ] && grep -q "$2" "$TMP/err"; then ok "$1"
	else not_ok "$1" "stderr: $(cat "$TMP/err")"; fi
}

# --- bulkhead-vmm and the test guests ------------------------------------------------------
vmm hello
check_eq "hello: exit code comes back through bulkhead-vmm" 42 "$rc"
printf 'hello from a bulkhead test guest\n' > "$TMP/want"
cmp -s "$TMP/want" "$TMP/out" && ok "hello: serial output is byte-exact on stdout" ||
	not_ok "hello: serial output is byte-exact on stdout" "$(od -c "$TMP/out" | head -5)"
check_eq "hello: nothing on stderr" "" "$(cat "$TMP/err")"

vmm halt
check_eq "halt: HLT with nothing to wake it exits 100" 100 "$rc"
err_line "halt: one stderr line with RIP" 'guest halted at RIP 0x'

vmm triple
check_eq "triple fault exits 101" 101 "$rc"
triple_line "triple fault"

vmm badexit
check_eq "an exit code above 99 exits 104, not aliasing a VMM status" 104 "$rc"

vmm unknown
check_eq "unknown ports and MMIO read all-ones and are not fatal" 0 "$rc"
grep -q 'unknown accesses: port 3 reads, 1 writes; MMIO 3 reads, 1 writes' "$TMP/err" &&
	ok "unknown accesses are counted" || not_ok "unknown accesses are counted" "$(cat "$TMP/err")"

"$VMM" --test-guest "$GUESTS/spin.bin" --timeout-ms 300 > "$TMP/out" 2> "$TMP/err" < /dev/null
check_eq "a guest that never stops is ended by --timeout-ms with 124" 124 "$?"

vmm loop
if [ "$rc" -eq 0 ] && [ "$(grep -c '^bulkhead-vmm: mark 1 ' "$TMP/err")" -ge 1 ] &&
	[ "$(grep -c '^bulkhead-vmm: mark 2 ' "$TMP/err")" -eq "$(grep -c '^bulkhead-vmm: mark 1 ' "$TMP/err")" ]; then
	ok "loop: exits 0 with paired timestamp marks"
else
	not_ok "loop: exits 0 with paired timestamp marks" "rc=$rc" "$(cat "$TMP/err")"
fi

vmm ring3
ring3=$(cat "$TMP/out")
case $ring3 in
0 | 3) ok "ring3 probe prints 0 or 3 (printed $ring3)" ;;
*) not_ok "ring3 probe prints 0 or 3" "stdout: $ring3" "stderr: $(cat "$TMP/err")" ;;
esac

# Set-up failures: 125 and one line saying what failed.
"$VMM" --test-guest "$TMP/no-such-guest.bin" > /dev/null 2> "$TMP/err"
check_eq "a missing guest image exits 125" 125 "$?"
err_line "a missing guest image: one line naming it" 'no-such-guest.bin: No such file'
: > "$TMP/empty.bin"
"$VMM" --test-guest "$TMP/empty.bin" > /dev/null 2> "$TMP/err"
check_eq "an empty guest image exits 125" 125 "$?"
"$VMM" --test-guest "$GUESTS/hello.bin" --mem 1 > /dev/null 2> "$TMP/err"
check_eq "--mem below the minimum exits 125" 125 "$?"
err_line "--mem below the minimum: one line" 'mem 1'
head -c $((3 << 20)) /dev/zero > "$TMP/big.bin"
"$VMM" --test-guest "$TMP/big.bin" --mem 2 > /dev/null 2> "$TMP/err"
check_eq "an image larger than RAM exits 125" 125 "$?"
err_line "an image larger than RAM: one line" 'does not fit in RAM'
"$VMM" --bogus > /dev/null 2> "$TMP/err"
check_eq "an unknown option exits 125" 125 "$?"

# --- bulkhead doctor -------------------------------------------------------------------------
if [ ! -x "$BULKHEAD" ]; then
	skip "doctor" "bulkhead not built (run make)"
	plan_done; exit 0
fi
"$BULKHEAD" doctor --help > "$TMP/help"
check_eq "doctor --help exits 0" 0 "$?"
grep -q '^usage: bulkhead doctor' "$TMP/help" && ok "doctor --help prints usage" ||
	not_ok "doctor --help prints usage" "$(cat "$TMP/help")"
"$BULKHEAD" doctor --bogus > /dev/null 2> "$TMP/err"
check_eq "doctor with a bad flag exits 125" 125 "$?"

"$BULKHEAD" doctor > "$TMP/doc" 2> "$TMP/doc.err"
drc=$?
check_eq "doctor exits 0 (some engine works here)" 0 "$drc"
[ "$drc" -eq 0 ] || printf '%s\n' "$(cat "$TMP/doc" "$TMP/doc.err")" | sed 's/^/# /'
missing=
for key in 'kvm' 'guest kernel mode' 'guest ring-3 syscall' 'qemu' 'virtiofsd' 'guest kernel' 'jail' 'cgroups' 'engine auto'; do
	[ "$(grep -c "^$key: " "$TMP/doc")" -eq 1 ] || missing="$missing '$key'"
done
check_eq "doctor prints each fact on exactly one line" "" "$missing"
grep -q '^kvm: usable (API 12' "$TMP/doc" && ok "doctor: kvm usable" ||
	not_ok "doctor: kvm usable" "$(cat "$TMP/doc")"
if [ "$(id -u)" = 0 ]; then
	grep -q '^jail: works (each session its own uid from 2063597568' "$TMP/doc" &&
		ok "doctor: the jail works (tried for real)" || not_ok "doctor: the jail works" "$(cat "$TMP/doc")"
fi
# Without bulkhead-vsock beside it the jail cannot be tried: a clear line, and exit 125.
mkdir "$TMP/bin" && cp "$BULKHEAD" "$TMP/bin/bulkhead"
"$TMP/bin/bulkhead" doctor > "$TMP/doc2" 2> "$TMP/doc2.err"
rc=$?
if [ $rc = 125 ] && grep -q '^jail: broken (bulkhead-vsock not found next to bulkhead' "$TMP/doc2" &&
	grep -q 'the jail cannot run on this host' "$TMP/doc2.err"; then
	ok "doctor: a jail that cannot run is reported, exit 125"
else
	not_ok "doctor: a broken jail" "rc=$rc" "$(cat "$TMP/doc2" "$TMP/doc2.err")"
fi

r3=$(sed -n 's/^guest ring-3 syscall: //p' "$TMP/doc")
case $ring3:$r3 in
0:works | 3:broken*) ok "doctor's ring-3 verdict matches the probe ($ring3: $r3)" ;;
*) not_ok "doctor's ring-3 verdict matches the probe" "probe printed '$ring3', doctor says '$r3'" ;;
esac
auto=$(sed -n 's/^engine auto: //p' "$TMP/doc")
case $r3:$auto in
broken*:kvm*) not_ok "auto does not pick kvm when ring-3 syscalls are broken" "$auto" ;;
*) ok "auto does not pick kvm when ring-3 syscalls are broken" ;;
esac

# Without its probe guests the doctor still answers: unknown, with the reason, never a crash.
mkdir -p "$TMP/emptylib"
BULKHEAD_LIBDIR=$TMP/emptylib "$BULKHEAD" doctor > "$TMP/doc2" 2> "$TMP/doc2.err"
drc=$?
if [ "$drc" -lt 126 ] && grep -q '^guest ring-3 syscall: unknown (.*ring3.bin' "$TMP/doc2"; then
	ok "doctor without probe guests reports unknown with the reason"
else
	not_ok "doctor without probe guests reports unknown with the reason" "rc=$drc" "$(cat "$TMP/doc2" "$TMP/doc2.err")"
fi

if [ -d /sys/module/kvm_pvm ]; then
	grep -q '^kvm: usable (API 12, module kvm_pvm)' "$TMP/doc" && ok "kvm_pvm host: doctor names the module" ||
		not_ok "kvm_pvm host: doctor names the module" "$(grep '^kvm:' "$TMP/doc")"
	grep -q '^guest kernel mode: emulated (~[0-9.]* million instructions/s)' "$TMP/doc" &&
		ok "kvm_pvm host: guest kernel mode is emulated" ||
		not_ok "kvm_pvm host: guest kernel mode is emulated" "$(grep '^guest kernel mode' "$TMP/doc")"
	check_eq "kvm_pvm host: ring-3 syscall is broken" "broken (handler ran in ring 3)" "$r3"
	case $auto in
	qemu*) ok "kvm_pvm host: auto picks qemu" ;;
	*) not_ok "kvm_pvm host: auto picks qemu" "$auto" ;;
	esac
else
	skip "kvm_pvm host: emulated kernel mode, broken ring-3 syscall" "not a kvm_pvm host"
fi

plan_done
