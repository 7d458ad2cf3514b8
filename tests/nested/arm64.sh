#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The arm64 suite (README.md, "arm64"): everything cross-built for arm64 (make ARCH=arm64: the
# guest kernel and initramfs, bulkhead-vmm, -vsock, -broker, the CLI) runs on arm64 KVM in a
# nested arm64 host, QEMU 10's TCG emulating a virt machine with EL2 and a GICv3, then again
# with a GICv2: Debian's arm64 cloud kernel, KVM built in, boots an initramfs
# (arm64_l1_init.sh). There bulkhead-vmm boots that same kernel as its guest
# (arm64_l2_init.sh), and with the GICv3, whole sessions run under --engine kvm. Checked here
# from what comes back: the guest's own line (this run's token, its vCPU count) and a clean
# power-off on 1 and 2 vCPUs, each thread's seccomp filter, a virtio-fs share, hostile test
# guests, bad Images refused in one line; `bulkhead doctor` (the vGIC, PSCI, the engine);
# sessions with an exit code, --work, -i, -t, start/exec/stop, a refused pause, and a broker
# that injects a vault token the guest never sees. Skips, saying why, when the arm64 packages
# cannot be fetched (no network the first time).
. "$(dirname "$0")/../e2e/lib.sh"
here=$(cd "$(dirname "$0")" && pwd)

pkgs=$(sh "$here/fetch.sh" --arch arm64 2> "$TMP/fetch.err")
case $? in
0) ;;
2) skip "arm64 host" "$(tail -n 1 "$TMP/fetch.err")"; plan_done; exit 0 ;;
*) not_ok "the arm64 packages are fetched" "$(tail -n 3 "$TMP/fetch.err")"; plan_done; exit 0 ;;
esac
command -v aarch64-linux-gnu-gcc > /dev/null ||
	{ skip "arm64 host" "no aarch64-linux-gnu-gcc (make deps installs it)"; plan_done; exit 0; }

# The arm64 bulkhead-vmm, cross-built beside this build.
ARM64_NESTED=$here
. "$here/arm64_host.sh"
abuild=$BUILD/arm64
start=$(date +%s)
if ! arm64_vmm "$abuild" all; then
	not_ok "make ARCH=arm64 builds everything" "$(tail -n 15 "$abuild.log")"
	plan_done
	exit 0
fi
ok "make ARCH=arm64 builds everything ($(($(date +%s) - start)) s)"
file "$abuild/bin/bulkhead-vmm" | grep -q "ARM aarch64, .*statically linked" &&
	ok "... bulkhead-vmm, a static arm64 program" ||
	not_ok "... bulkhead-vmm, a static arm64 program" "$(file "$abuild/bin/bulkhead-vmm")"
file "$abuild/bin/bulkhead" | grep -q "ARM aarch64, .*dynamically linked" &&
	ok "... the CLI, an arm64 program" || not_ok "... the CLI, an arm64 program" "$(file "$abuild/bin/bulkhead")"

arm64_tree "$pkgs" "$abuild/bin/bulkhead-vmm" "$here/arm64_l1_init.sh" "$TMP/l1"
# The arm64 test guests, one Image per case of tests/guests/arm64/poke.S.
for c in 1 2 3 4 5; do
	aarch64-linux-gnu-gcc -nostdlib -static -Wl,-Ttext=0 -Wl,--build-id=none \
		-Wa,--defsym,CASE=$c -o "$TMP/poke.elf" "$here/../guests/arm64/poke.S" &&
		aarch64-linux-gnu-objcopy -O binary "$TMP/poke.elf" "$TMP/l1/l2/poke$c.img" ||
		not_ok "the arm64 test guest $c assembles"
done
arm64_prog "$pkgs/arm64-qemu" usr/lib/qemu/virtiofsd "$TMP/l1" ||
	not_ok "Debian's arm64 virtiofsd and its libraries are copied"
arm64_stack "$pkgs" "$abuild" "$TMP/l1" || not_ok "the arm64 build and its libraries are copied"
if test_pki; then
	mkdir -p "$TMP/l1/pki" && cp "$TMP/ca.pem" "$TMP/up.pem" "$TMP/up.key" "$TMP/l1/pki/"
else
	not_ok "test PKI made with openssl"
fi
arm64_cpio "$TMP/l1" "$TMP/l1.gz"

token=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
# expect NAME STATUS DESCRIPTION PATTERN...: one check, that run NAME of the GICv3 boot ended
# with STATUS and printed a line matching each PATTERN.
expect() {
	_run=$1 _st=$2 _what=$3
	shift 3
	_o=$(out 3 "$_run") _good=1
	[ "$(rc 3 "$_run")" = "$_st" ] || _good=
	for _p in "$@"; do echo "$_o" | grep -q -- "$_p" || _good=; done
	if [ -n "$_good" ]; then ok "$_what"; else not_ok "$_what" "status $(rc 3 "$_run")" "$_o"; fi
}
arm64_sessions_check() {
	expect session 3 "bulkhead run --engine kvm: the command runs in an arm64 guest and its exit code (3) is bulkhead's" \
		"^hello $token from aarch64 on 1 vCPU$"
	expect work 0 "--work on 2 vCPUs: the guest reads the host's file through virtio-fs" "^from the host $token$"
	grep -q "^arm64: work out=written in the guest $token$" "$TMP/report-3" &&
		ok "... and what it writes is in the host's directory" ||
		not_ok "... and what it writes is in the host's directory" "$(grep '^arm64: work out' "$TMP/report-3")"
	expect stdin 0 "-i: the host's stdin reaches the guest command" "^piped $token$" "^stdin-done$"
	expect tty 0 "-t: the guest command has a pseudo-terminal" "^/dev/pts/" "^tty-done$"
	grep -q "^arm64: start id=[0-9a-f]\{16\} *$" "$TMP/report-3" &&
		ok "bulkhead start prints the session's id" || not_ok "bulkhead start" "$(grep '^arm64: start' "$TMP/report-3")"
	expect exec1 0 "bulkhead exec runs in the started session (2 vCPUs)" "^exec 42 on 2 vCPUs$"
	expect exec2 7 "... with the command's exit code (7)"
	expect stop 0 "bulkhead stop ends it"
	expect gone 125 "... and an exec after it is refused" "no session [0-9a-f]* here"
	expect pause 0 "bulkhead pause of an arm64 session is refused in one line (status 125)" \
		"cannot pause: bulkhead-vmm saves no arm64 guest yet" "^pause=125$"
	expect broker 0 "a broker session: the guest's request reaches the HTTPS upstream, the vault's token injected, its echo scrubbed" \
		"^GET /v1/items" "^Authorization: Bearer \\[bulkhead:redacted\\]" "^wget=0$"
	grep -q "^arm64: upstream 1 0$" "$TMP/report-3" &&
		ok "... the upstream saw the token; nothing the guest printed or holds in its files has it" ||
		not_ok "the token reaches the upstream, not the guest" "$(grep '^arm64: upstream' "$TMP/report-3")"
}
# boot GIC: one arm64 host; its report in $TMP/report-GIC.
boot() { # GIC PLAN
	start=$(date +%s)
	arm64_boot "$pkgs" "$1" "$TMP/l1.gz" "$TMP/report-$1" "bulkhead.token=$token arm64.plan=$2"
	echo "# arm64 host with a GICv$1: QEMU status $?, $(($(date +%s) - start)) s"
}
# out GIC NAME: the lines run NAME printed; rc GIC NAME: its status.
out() { sed -n "/^arm64: $2 rc=/,/^arm64: /p" "$TMP/report-$1" | sed -n 's/^| //p'; }
rc() { sed -n "s/^arm64: $2 rc=\([0-9]*\).*/\1/p" "$TMP/report-$1"; }
took() { sed -n "s/^arm64: $2 rc=[0-9]* t0=\([0-9.]*\) t1=\([0-9.]*\)/\1 \2/p" "$TMP/report-$1" |
	awk '{ printf "%.2f", $2 - $1 }'; }

for gic in 3 2; do
	if [ $gic = 3 ]; then boot 3 vmm,doctor,sessions; else boot 2 vmm,doctor; fi
	if ! grep -q "^arm64: done" "$TMP/report-$gic"; then
		not_ok "GICv$gic: the arm64 host ran its plan" "$(tail -n 25 "$TMP/report-$gic")"
		continue
	fi
	grep -q "^arm64: kvm /dev/kvm" "$TMP/report-$gic" && ok "GICv$gic: the arm64 host has /dev/kvm" ||
		not_ok "GICv$gic: the arm64 host has /dev/kvm" "$(grep '^arm64: kvm' "$TMP/report-$gic")"
	for n in 1 2; do
		o=$(out $gic boot$n)
		# The guest finds the GIC the device tree describes: a GICv3, or (GICv2 host) not.
		v3=0
		echo "$o" | grep -q "GICv3: " && v3=1
		if [ "$(rc $gic boot$n)" = 0 ] && echo "$o" | grep -q "^L2: token $token cpus $n " &&
			[ "$v3" = "$([ $gic = 3 ] && echo 1 || echo 0)" ]; then
			ok "GICv$gic: bulkhead-vmm boots Linux on $n vCPU(s) with a GICv$gic, its console on the 8250, and ends with its power-off (status 0; $(took $gic boot$n) s)"
		else
			not_ok "GICv$gic: bulkhead-vmm boots Linux on $n vCPU(s)" "status $(rc $gic boot$n)" "$(echo "$o" | tail -n 15)"
		fi
	done
	o=$(out $gic selftest)
	if [ "$(rc $gic selftest)" = 159 ] && echo "$o" | grep -q "selftest: vcpu 0: open /etc/passwd: Permission denied" &&
		echo "$o" | grep -q "selftest: vcpu 1: open /etc/passwd: Permission denied" &&
		echo "$o" | grep -q "calling getppid, which is not on the list"; then
		ok "GICv$gic: every vCPU thread and the main thread run under their seccomp filters; a call off the list kills (SIGSYS)"
	else
		not_ok "GICv$gic: the seccomp filters are in place" "status $(rc $gic selftest)" "$(echo "$o" | tail -n 15)"
	fi
	o=$(out $gic doctor)
	if [ "$(rc $gic doctor)" = 0 ] && echo "$o" | grep -q "^kvm: usable (API 12, module kvm, vGICv$gic, PSCI 0.2)" &&
		echo "$o" | grep -q "^engine auto: kvm " && echo "$o" | grep -q "^guest kernel: .*/Image (arm64 Image)"; then
		ok "GICv$gic: bulkhead doctor names the vGICv$gic and PSCI 0.2 KVM offers, the arm64 Image, and picks the kvm engine"
	else
		not_ok "GICv$gic: bulkhead doctor on arm64" "status $(rc $gic doctor)" "$o"
	fi
	[ $gic = 3 ] || continue
	arm64_sessions_check
	# A virtio-fs share: virtio-mmio named in the device tree, on its SPI, through the vhost-user
	# front end to Debian's arm64 virtiofsd.
	o=$(out 3 share)
	if [ "$(rc 3 share)" = 0 ] && echo "$o" | grep -q "^L2: share read from the arm64 host $token" &&
		grep -q "^arm64: share out=written by L2 $token" "$TMP/report-3"; then
		ok "a virtio-fs share over vhost-user (virtiofsd): the guest reads the host's file and writes one back"
	else
		not_ok "a virtio-fs share over vhost-user" "status $(rc 3 share)" "$(echo "$o" | tail -n 15)" \
			"$(grep '^arm64: share\|^arm64: virtiofsd' "$TMP/report-3")"
	fi
	# The test guests: the 8250, the vGIC and the timer written by the guest, PSCI, an access
	# KVM cannot hand to user space, an address with nothing there, a guest that never ends.
	o=$(out 3 poke1)
	[ "$(rc 3 poke1)" = 0 ] && echo "$o" | grep -q "^poke: hello" &&
		ok "a test guest's 8250 output arrives and its PSCI power-off ends the run (status 0)" ||
		not_ok "the test guest hello" "status $(rc 3 poke1)" "$o"
	o=$(out 3 poke2)
	if [ "$(rc 3 poke2)" = 0 ] && echo "$o" | grep -q "^poke: unknown PSCI function refused" &&
		echo "$o" | grep -q "^poke: gic written" && echo "$o" | grep -q "^poke: trap" &&
		! echo "$o" | grep -q "not trapped"; then
		ok "a guest writing all of the GIC and the timer harms nothing; an unknown PSCI call is refused; an EL2 register traps in the guest"
	else
		not_ok "the test guest gic" "status $(rc 3 poke2)" "$o"
	fi
	o=$(out 3 poke3)
	[ "$(rc 3 poke3)" = 105 ] && [ "$(echo "$o" | grep -c .)" = 1 ] && echo "$o" | grep -q "KVM_RUN failed on vCPU 0" &&
		ok "an MMIO access KVM cannot describe ends the run in one line (status 105)" ||
		not_ok "the test guest nisv" "status $(rc 3 poke3)" "$o"
	o=$(out 3 poke4)
	[ "$(rc 3 poke4)" = 0 ] && echo "$o" | grep -q "^poke: wild done" &&
		echo "$o" | grep -q "unknown accesses: .*MMIO 1 reads, 1 writes" &&
		ok "a guest's access where nothing is mapped reads nothing, is counted, and the guest runs on" ||
		not_ok "the test guest wild" "status $(rc 3 poke4)" "$o"
	o=$(out 3 closedout)
	[ "$(rc 3 closedout)" = 0 ] && echo "$o" | grep -qx "status 124" &&
		ok "started with stderr closed, bulkhead-vmm still stops a guest that never ends at --timeout-ms (124)" ||
		not_ok "bulkhead-vmm with stderr closed: --timeout-ms holds" "$o"
	o=$(out 3 poke5)
	[ "$(rc 3 poke5)" = 124 ] &&
		ok "a guest that never ends is stopped at --timeout-ms (status 124)" ||
		not_ok "the test guest spin" "status $(rc 3 poke5)" "$o"
	for c in nomagic:"not an arm64 Image" short:"too short for an arm64 Image" small:"give more --mem"; do
		name=${c%%:*} want=${c#*:}
		o=$(out $gic "$name")
		if [ "$(rc $gic "$name")" = 125 ] && [ "$(echo "$o" | grep -c .)" = 1 ] && echo "$o" | grep -q "$want"; then
			ok "a bad boot ($name) is refused in one line, naming what is wrong"
		else
			not_ok "a bad boot ($name) is refused in one line" "status $(rc $gic "$name")" "$o"
		fi
	done
done
plan_done
