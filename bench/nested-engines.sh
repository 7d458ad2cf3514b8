#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (bench/nested.sh boots it): `bulkhead run -- true`, whole sessions, under
# bulkhead-vmm (--engine kvm) against QEMU 10 with -accel kvm and with TCG, measured in the
# same run; medians and ratios to the kvm engine. For TCG /dev/kvm is moved aside meanwhile
# (then no engine can use KVM and `--engine qemu` picks TCG).
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
B=$BUILD/bin/bulkhead
RUNS=${RUNS:-5}
TMP=$(mktemp -d /tmp/nested-engines.XXXXXX)

# time_runs FILE ARGS...: RUNS sessions of `bulkhead run ARGS -- true`, microseconds each.
time_runs() {
	f=$1; shift
	: > "$f"
	i=0
	while [ $i -lt "$RUNS" ]; do
		t0=$(now_us)
		if "$B" run "$@" -- true > /dev/null 2> "$TMP/err" < /dev/null; then
			echo $(($(now_us) - t0)) >> "$f"
		else
			echo "bulkhead run $* failed: $(cat "$TMP/err")"
		fi
		i=$((i + 1))
	done
}
time_runs "$TMP/kvm" --engine kvm
time_runs "$TMP/qkvm" --engine qemu
mv /dev/kvm /dev/kvm.aside
time_runs "$TMP/qtcg" --engine qemu
mv /dev/kvm.aside /dev/kvm

kvm=$(median "$TMP/kvm")
echo "bulkhead run -- true, $RUNS sessions each, median (ratio to --engine kvm):"
for e in kvm:"--engine kvm (bulkhead-vmm)" qkvm:"--engine qemu, QEMU 10 -accel kvm" qtcg:"--engine qemu, QEMU 10 TCG"; do
	m=$(median "$TMP/${e%%:*}") || { echo "  ${e#*:}: no session succeeded"; continue; }
	awk -v m="$m" -v k="$kvm" -v n="${e#*:}" -v c="$(wc -l < "$TMP/${e%%:*}")" \
		'BEGIN { printf "  %-36s %8.0f ms  %5.2fx  (%d good)\n", n, m / 1000, m / k, c }'
done
rm -rf "$TMP"
