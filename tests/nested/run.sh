#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The nested suite (tests/nested/README.md): boots L1, a KVM host with hardware semantics under
# QEMU TCG, once, and turns what it reports (l1-run.sh's line protocol) into TAP: each check of
# each suite run inside L1 becomes one line here, named "L1 SUITE: ...". A suite that exits
# non-zero without a failing check, prints no check, hangs (its watchdog's report follows as
# comments), or never ends (L1 died or froze: the last console lines follow) is a failure.
# Skips, saying why, when L1's packages cannot be fetched (no network the first time).
# Usage: tests/nested/run.sh [SUITE,...]   (BUILD=build; NESTED_SUITES overrides the list)
. "$(dirname "$0")/../e2e/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

# The suites L1 runs: bulkhead-vmm's own (test guests, machine, jail, Linux), the doctor, and
# sessions under --engine kvm (auto picks it in L1): exec, -i, -t, start/exec/stop, a broker
# session with an injected token, cgroup v2, the work share, several vCPUs; the jail (test_jail);
# sessions restored from templates (l1_templates); pause and resume (l1_pause).
DEFAULT=test_doctor,test_vmm,test_vmm_snapshot,test_vmm_jail,test_vmm_linux,test_vmm_virtiofs,test_jail,test_exec,test_broker_session,test_cgroup,l1_sessions,l1_templates,l1_pause
suites=${1:-${NESTED_SUITES:-$DEFAULT}}

for t in "$BUILD/tests/https-echo" "$BUILD/tests/vsock-restart-probe" "$BIN/bulkhead-vmm"; do
	if [ ! -x "$t" ]; then
		skip "L1 (nested KVM host)" "$t not built (make test-programs)"
		plan_done; exit 0
	fi
done

# boot_and_report SUITES OUTDIR: boots L1 with SUITES and turns its report into TAP. Leaves
# $qrc (QEMU's status), $suite (the suite L1 stopped in, if it did), $ended (the plan ran to
# its end) and $rest (SUITES from the one it stopped in on).
boot_and_report() {
	plan=$1 out=$2
	start=$(date +%s)
	sh "$here/boot.sh" "$plan" "$out" 2> "$TMP/boot.err"
	qrc=$?
	if [ $qrc -eq 2 ] && [ ! -s "$out/report" ]; then
		skip "L1 (nested KVM host)" "$(tail -n 1 "$TMP/boot.err")"
		plan_done; exit 0
	fi
	echo "# L1: QEMU 10 TCG, whole run $(($(date +%s) - start)) s (image $(cat "$out/image" 2> /dev/null))"
	suite= nchecks=0 nfail=0 ended=
	cr=$(printf '\r')
	while IFS= read -r line; do
		line=${line%"$cr"} # the serial port's line discipline may end lines with CR LF
		case $line in
		"nested: done") ended=1 ;;
		"nested: "*) echo "# L1: ${line#nested: }" ;;
		"begin "*) suite=${line#begin } nchecks=0 nfail=0 ;;
		"| "*)
			# "| UPTIME TEXT": the suite's own line.
			text=${line#| }
			case $text in [0-9]*" "*) text=${text#* } ;; esac
			case $text in
			"ok "*"# SKIP"*)
				nchecks=$((nchecks + 1))
				d=${text#ok }; d=${d#[0-9]* - }; d=${d#- }
				skip "L1 $suite: ${d%% \# SKIP*}" "${d#*\# SKIP }" ;;
			"ok "*)
				nchecks=$((nchecks + 1))
				d=${text#ok }; d=${d#[0-9]* - }; d=${d#- }
				ok "L1 $suite: $d" ;;
			"not ok "*)
				nchecks=$((nchecks + 1)) nfail=$((nfail + 1))
				d=${text#not ok }; d=${d#[0-9]* - }; d=${d#- }
				not_ok "L1 $suite: $d" ;;
			"#"*) echo "$text" ;;
			esac ;;
		"end "*)
			set -- $line
			if [ "$3" != 0 ] && [ $nfail -eq 0 ]; then
				not_ok "L1 $suite exited with status $3 without reporting a failure"
			elif [ $nchecks -eq 0 ]; then
				not_ok "L1 $suite ran no check"
			fi
			echo "# L1 $suite: $nchecks checks in $4 s"
			suite= ;;
		esac
	done < "$out/report"
	rest=
	[ -n "$suite" ] && rest=$(echo "$plan" | tr ',' '\n' | sed -n "/^$suite\$/,\$p" | paste -sd, -)
}

# L1's own kernel dying (a panic inside kvm_amd under TCG's emulated SVM, seen about once in
# ten CI runs) or all of L1 freezing (boot.sh: silent for 300 s, no watchdog inside it firing)
# is the test host failing, not bulkhead: L1 is booted once more with the suite it stopped in
# and those after it, and why is printed. Every check already reported stands, failures
# included; a second stop, or any other way of stopping, fails.
boot_and_report "$suites" "$TMP/l1"
if [ -z "$ended" ] && [ -n "$rest" ] && grep -q "Kernel panic" "$out/console"; then
	echo "# L1's kernel panicked during $suite; its console:"
	grep -m 1 -B 2 -A 12 -E "BUG:|Oops|general protection|Kernel panic|WARNING:" "$out/console" |
		sed 's/^/#   /'
	echo "# booting L1 once more for: $rest"
	boot_and_report "$rest" "$TMP/l1-again"
elif [ -z "$ended" ] && [ -n "$rest" ] && [ -s "$out/stalled" ]; then
	echo "# L1 froze during $suite: its console and report were silent for $(cat "$out/stalled") s" \
		"(no watchdog inside L1 fired); its last console lines:"
	tail -n 5 "$out/console" | sed 's/^/#   /'
	echo "# booting L1 once more for: $rest"
	boot_and_report "$rest" "$TMP/l1-again"
fi

if [ -n "$suite" ]; then
	not_ok "L1 $suite ended" "L1 stopped during it (QEMU status $qrc)" \
		"first kernel messages of note:" \
		"$(grep -m 1 -A 12 -E "BUG:|Oops|general protection|Kernel panic|WARNING:|rcu_.*stall|soft lockup" "$out/console")" \
		"last console lines:" "$(tail -n 25 "$out/console")"
fi
if [ -z "$ended" ]; then
	not_ok "L1 ran its whole plan and powered off" "QEMU status $qrc" "$(tail -n 5 "$TMP/boot.err")" \
		"$(tail -n 5 "$out/qemu.log")" "last console lines:" "$(tail -n 25 "$out/console")"
else
	check_eq "L1 powered off by itself (QEMU status 0)" 0 "$qrc"
fi
plan_done
