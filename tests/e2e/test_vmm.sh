#!/bin/sh
# End to end: bulkhead-vmm's Linux machine (--machine) seen from inside freestanding test
# guests on this host's KVM: boot registers and zero page, CPUID and N vCPUs with their APIC
# IDs, the 8250 byte-exact and its interrupt, i8042 reset and triple-fault statuses.
. "$(dirname "$0")/lib.sh"

VMM=$BIN/bulkhead-vmm
GUESTS=$LIBDIR/guests

if [ ! -e /dev/kvm ]; then
	skip "bulkhead-vmm machine tests" "no /dev/kvm on this host"
	plan_done; exit 0
fi
for g in zeropage cpus uart reset triple; do
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
