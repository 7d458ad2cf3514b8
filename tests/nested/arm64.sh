#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The arm64 suite (README.md, "arm64"): bulkhead-vmm cross-built for arm64 (make ARCH=arm64)
# runs on arm64 KVM in a nested arm64 host, QEMU 10's TCG emulating a virt machine with EL2
# and a GICv3, then again with a GICv2: Debian's arm64 cloud kernel, KVM built in, boots an
# initramfs (arm64_l1_init.sh) that runs bulkhead-vmm, which boots the same kernel as its guest
# (arm64_l2_init.sh). Checked here from what comes back: the guest's own line (this run's token,
# its vCPU count) and a clean power-off on 1 and 2 vCPUs, each thread's seccomp filter, and
# bad Images refused in one line. Skips, saying why, when the arm64 packages cannot be
# fetched (no network the first time).
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
abuild=$BUILD/arm64
start=$(date +%s)
if ! make -s ARCH=arm64 BUILD="$abuild" "$abuild/bin/bulkhead-vmm" > "$TMP/make.log" 2>&1; then
	not_ok "make ARCH=arm64 builds bulkhead-vmm" "$(tail -n 15 "$TMP/make.log")"
	plan_done
	exit 0
fi
ok "make ARCH=arm64 builds bulkhead-vmm ($(($(date +%s) - start)) s)"
file "$abuild/bin/bulkhead-vmm" | grep -q "ARM aarch64, .*statically linked" &&
	ok "... a static arm64 program" || not_ok "... a static arm64 program" "$(file "$abuild/bin/bulkhead-vmm")"

# The guest's initramfs, then the arm64 host's: busybox, bulkhead-vmm, the kernel and the guest.
mk_cpio() { # DIR OUT
	(cd "$1" && find . | cpio -o -H newc 2> /dev/null | gzip -1 > "$2")
}
for d in l2 l1; do mkdir -p "$TMP/$d/bin" "$TMP/$d/proc" "$TMP/$d/sys" "$TMP/$d/dev"; done
cp "$pkgs/arm64/bin/busybox" "$TMP/l2/bin/busybox"
cp "$pkgs/arm64/bin/busybox" "$TMP/l1/bin/busybox"
cp "$here/arm64_l2_init.sh" "$TMP/l2/init"
cp "$here/arm64_l1_init.sh" "$TMP/l1/init"
chmod 755 "$TMP/l2/init" "$TMP/l1/init"
mkdir -p "$TMP/l1/l2"
mk_cpio "$TMP/l2" "$TMP/l1/l2/initrd.gz"
cp "$pkgs/l1/vmlinuz" "$TMP/l1/l2/Image"
cp "$abuild/bin/bulkhead-vmm" "$TMP/l1/bin/bulkhead-vmm"
mk_cpio "$TMP/l1" "$TMP/l1.gz"

token=$(od -An -tx1 -N8 /dev/urandom | tr -d ' \n')
# boot GIC: one arm64 host; its report in $TMP/report-GIC.
boot() {
	start=$(date +%s)
	LD_LIBRARY_PATH=$pkgs/usr/lib/x86_64-linux-gnu timeout 900 \
		"$pkgs/usr/bin/qemu-system-aarch64" -L "$pkgs/usr/share/qemu" \
		-M "virt,virtualization=on,gic-version=$1" -cpu max -smp 2 -m 2048 \
		-nographic -no-reboot -kernel "$pkgs/l1/vmlinuz" -initrd "$TMP/l1.gz" \
		-append "console=ttyAMA0 rdinit=/init panic=-1 quiet bulkhead.token=$token" \
		< /dev/null > "$TMP/report-$1" 2>&1
	qrc=$?
	tr -d '\r' < "$TMP/report-$1" > "$TMP/r" && mv "$TMP/r" "$TMP/report-$1"
	echo "# arm64 host with a GICv$1: QEMU status $qrc, $(($(date +%s) - start)) s"
}
# out GIC NAME: the lines run NAME printed; rc GIC NAME: its status.
out() { sed -n "/^arm64: $2 rc=/,/^arm64: /p" "$TMP/report-$1" | sed -n 's/^| //p'; }
rc() { sed -n "s/^arm64: $2 rc=\([0-9]*\).*/\1/p" "$TMP/report-$1"; }
took() { sed -n "s/^arm64: $2 rc=[0-9]* t0=\([0-9.]*\) t1=\([0-9.]*\)/\1 \2/p" "$TMP/report-$1" |
	awk '{ printf "%.2f", $2 - $1 }'; }

for gic in 3 2; do
	boot $gic
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
	[ $gic = 3 ] || continue
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
