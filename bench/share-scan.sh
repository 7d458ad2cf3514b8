#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/share-scan.sh: what the credential scan of a work share costs before a session starts
# (session/share_scan.c), against share size, beside a whole `bulkhead run -- true` in the same
# run. For each size (files spread over directories of 1,000, one .env among them), the scan
# alone (`bulkhead policy share DIR`) with the page cache warm and, as root, cold (caches
# dropped first), and `bulkhead run --work DIR --share-secrets hide -- true` against
# `bulkhead run -- true`. Prints medians and ratios. Measured, never asserted.
# Usage: RUNS=5 SIZES="10000 90000" bench/share-scan.sh   (trees are made in TMPDIR, /tmp; a
# share past the scan's 100,000-entry bound is refused, so sessions are measured below it)
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-5}
SIZES=${SIZES:-10000 90000}
bin=$BUILD/bin/bulkhead
. "$(dirname "$0")/lib.sh"
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
ms() { echo $(($(now_us) / 1000)); }
cold=no
[ "$(id -u)" = 0 ] && [ -w /proc/sys/vm/drop_caches ] && cold=yes

# tree DIR N: N empty files in directories of 1,000, and one .env with a value.
tree() {
	mkdir -p "$1"
	d=0
	while [ $((d * 1000)) -lt "$2" ]; do
		mkdir "$1/d$d"
		n=$(($2 - d * 1000))
		[ $n -gt 1000 ] && n=1000
		(cd "$1/d$d" && seq -f 'f%g' 1 "$n" | xargs touch)
		d=$((d + 1))
	done
	echo "KEY=value" > "$1/.env"
}

echo "work share credential scan, median of $RUNS runs; $(nproc) cores; cold cache: $cold"
printf '%-10s %10s %10s %12s %12s %8s %s\n' files "scan ms" "cold ms" "run ms" "plain ms" ratio note
for n in $SIZES; do
	tree "$tmp/t$n" "$n"
	: > "$tmp/scan" && : > "$tmp/cold" && : > "$tmp/run" && : > "$tmp/plain"
	for i in $(seq "$RUNS"); do
		t0=$(ms)
		"$bin" policy share "$tmp/t$n" > "$tmp/out" 2>&1 || true
		echo $(($(ms) - t0)) >> "$tmp/scan"
		if [ $cold = yes ]; then
			sync
			echo 3 > /proc/sys/vm/drop_caches
			t0=$(ms)
			"$bin" policy share "$tmp/t$n" > /dev/null 2>&1 || true
			echo $(($(ms) - t0)) >> "$tmp/cold"
		fi
		t0=$(ms)
		"$bin" run --work "$tmp/t$n" --share-secrets hide -- true > /dev/null 2>&1
		echo $(($(ms) - t0)) >> "$tmp/run"
		t0=$(ms)
		"$bin" run -- true > /dev/null 2>&1
		echo $(($(ms) - t0)) >> "$tmp/plain"
	done
	note=$(sed -n 's/^scan:     //p' "$tmp/out" | cut -c1-60)
	s=$(median "$tmp/scan")
	c=$(median "$tmp/cold" 2> /dev/null || echo -)
	r=$(median "$tmp/run")
	p=$(median "$tmp/plain")
	awk -v n="$n" -v s="$s" -v c="$c" -v r="$r" -v p="$p" -v note="$note" \
		'BEGIN { printf "%-10d %10d %10s %12d %12d %8.2f %s\n", n, s, c, r, p, (p > 0 ? r / p : 0), note }'
	rm -rf "$tmp/t$n"
done
echo "ratio: a session on the share (scanned, its .env hidden) to one without a share"
