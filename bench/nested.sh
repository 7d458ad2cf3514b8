#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Boots L1 (tests/nested/: a KVM host with hardware semantics under QEMU 10's TCG) once and runs
# the in-L1 benchmarks there, bench/nested-NAME.sh for each NAME given (default: boot engines):
# boot  - bulkhead bench boot under both engines; initramfs unpack and i8042 probe costs
# engines - `bulkhead run -- true` under bulkhead-vmm, QEMU -accel kvm and QEMU TCG
# soak  - SESSIONS (100) sessions in a row under bulkhead-vmm, each checked
# snapshot - a Linux guest's first answer after a cold boot against after a restore
# templates - a session's first byte cold against from a template; a serve pool's fill
# Also prints L1's own boot: QEMU start to L1's user space, and the whole run.
# Usage: sh bench/nested.sh [NAME...]   (BUILD=build; make bench-nested)
set -u
here=$(cd "$(dirname "$0")" && pwd)
names=${*:-boot engines}
plan=$(for n in $names; do printf 'bench-%s,' "$n"; done)
out=$(mktemp -d "${TMPDIR:-/tmp}/bench-nested.XXXXXX")
sh "$here/../tests/nested/boot.sh" "$plan" "$out" 3000 &
bpid=$!
# L1's boot from outside: QEMU's start (boot.sh writes start_ns) to its first report line.
while [ ! -s "$out/report" ] && kill -0 $bpid 2> /dev/null; do sleep 0.1; done
up=$(date +%s%N)
wait $bpid
rc=$?
[ -f "$out/start_ns" ] && awk -v a="$(cat "$out/start_ns")" -v b="$up" -v e="$(cat "$out/end_ns")" 'BEGIN {
	printf "L1: user space reporting %.1f s after QEMU started; the whole run %.0f s\n", (b - a) / 1e9, (e - a) / 1e9 }'
sed -n 's/^nested: /L1: /p; s/^| [0-9.]* //p; s/^end \(.*\) \(.*\) \(.*\)/(\1: status \2, \3 s)/p' "$out/report"
[ $rc -eq 0 ] || { echo "L1 ended with status $rc; last console lines:"; tail -n 20 "$out/console"; }
rm -rf "$out"
