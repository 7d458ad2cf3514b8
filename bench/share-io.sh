#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Work-share I/O: sequential write and read of 256 MiB and a 2,000-file
# create/stat/delete run, inside the guest on /work/data (virtio-fs) and, as the
# reference, the same busybox commands on the host directory in the same run; and in
# the guest again with rules in the share (data rw under a read-only share, a path
# read-only and one hidden: each a mount in virtiofsd's namespace, session/share_rules.h),
# against the guest without them (the goal: within 5 %).
# Prints medians over RUNS and the ratios. Usage: RUNS=3 bench/share-io.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-3}
bin=$BUILD/bin/bulkhead
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/share/data" "$tmp/share/config" "$tmp/share/secrets"
. "$(dirname "$0")/lib.sh"

# One workload, timed in ms per phase with /proc/uptime (10 ms steps; every phase
# here takes far longer). Page caches are dropped before the read so it reads
# through the share, not from the guest's (or host's) memory.
cat > "$tmp/share/workload.sh" <<'W'
dir=$1
now() { read -r u _ < /proc/uptime; echo $(( ${u%.*} * 1000 + 1${u#*.} * 10 - 1000 )); }
t0=$(now)
dd if=/dev/zero of="$dir/seq" bs=1M count=256 conv=fsync 2>/dev/null
t1=$(now)
sync; echo 3 > /proc/sys/vm/drop_caches
t2=$(now)
cat "$dir/seq" > /dev/null
t3=$(now)
mkdir "$dir/many"; i=0
while [ $i -lt 2000 ]; do : > "$dir/many/f$i"; i=$((i + 1)); done
ls -l "$dir/many" > /dev/null
rm -r "$dir/many" "$dir/seq"
t4=$(now)
echo "$((t1 - t0)) $((t3 - t2)) $((t4 - t3))"
W

for i in $(seq "$RUNS"); do
	"$bin" run --mem 512 --work "$tmp/share" -- sh /work/workload.sh /work/data >> "$tmp/guest"
	"$bin" run --mem 512 --work "$tmp/share:ro" --work-rule data:rw --work-rule config:ro \
		--work-rule secrets:hidden -- sh /work/workload.sh /work/data >> "$tmp/rules"
	busybox sh "$tmp/share/workload.sh" "$tmp/share/data" >> "$tmp/host"
done

engine=$("$bin" run -v -- true 2>&1 >/dev/null | sed -n 's/^bulkhead: engine: //p')
echo "work share I/O, median of $RUNS runs; engine: $engine"
printf '%-32s %10s %10s %8s %10s %8s\n' phase "guest ms" "host ms" ratio "rules ms" "rules/g"
col=1
for phase in "write 256 MiB (fsync)" "read 256 MiB (cold)" "2,000 files create/stat/delete"; do
	g=$(cut -d' ' -f$col "$tmp/guest" | median)
	h=$(cut -d' ' -f$col "$tmp/host" | median)
	r=$(cut -d' ' -f$col "$tmp/rules" | median)
	awk -v p="$phase" -v g="$g" -v h="$h" -v r="$r" 'BEGIN { printf "%-32s %10d %10d %8.1f %10d %8.2f\n", p, g, h, (h > 0 ? g / h : 0), r, (g > 0 ? r / g : 0) }'
	col=$((col + 1))
done
