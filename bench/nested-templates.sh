#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (bench/nested.sh boots it; `make bench-nested NESTED_BENCH=templates`): whole
# sessions, `bulkhead run -- echo hi` booted cold against `bulkhead run --template -- echo hi`
# restored from a template of the same shape, alternating, RUNS times each, for 256 MiB and
# 1 GiB guests: the time from the command's start to the first byte of its output, medians
# and their ratio. Then `bulkhead serve --pool 4` filling its pool, cold against --template:
# the time until all four are ready. Figures are relative: L1 runs under TCG.
. "$(dirname "$0")/lib.sh"
BUILD=${BUILD:-build}
BULKHEAD=$(cd "$BUILD/bin" && pwd)/bulkhead
FDC=$(cd "$BUILD/tests" && pwd)/fd-connect # (no curl in L1: HTTP/1.1 by hand)
RUNS=${RUNS:-5}
TMP=$(mktemp -d /tmp/nested-templates.XXXXXX)
trap 'kill $(jobs -p) 2> /dev/null; rm -rf "$TMP"' EXIT
export BULKHEAD_CACHE="$TMP/cache" BULKHEAD_RUNDIR="$TMP/run"

now_ns() { date +%s%N; }
# first_byte ARGS...: ms from the start of `bulkhead run ARGS -- echo hi` to its "hi".
first_byte() {
	t0=$(now_ns)
	t1=$("$BULKHEAD" run "$@" -- echo hi 2> "$TMP/err" | { read -r l && [ "$l" = hi ] && now_ns; cat > /dev/null; })
	[ -n "$t1" ] || { echo "no output: $(head -c 300 "$TMP/err")" >&2; exit 1; }
	awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f\n", (b - a) / 1e6 }'
}

for mem in 256 1024; do
	t0=$(now_ns)
	first_byte --mem $mem --template > /dev/null # makes the template
	made=$(awk -v a="$t0" -v b="$(now_ns)" 'BEGIN { printf "%.0f", (b - a) / 1e6 }')
	size=$(du -k "$BULKHEAD_CACHE"/templates/*.snap | awk -v m=$mem '{ s += $1 } END { printf "%.1f", s / 1024 }')
	: > "$TMP/cold"; : > "$TMP/tmpl"
	i=0
	while [ $i -lt "$RUNS" ]; do
		first_byte --mem $mem >> "$TMP/cold"
		first_byte --mem $mem --template >> "$TMP/tmpl"
		i=$((i + 1))
	done
	c=$(median < "$TMP/cold"); t=$(median < "$TMP/tmpl")
	echo "== ${mem} MiB guest: first byte of 'echo hi', median of $RUNS: cold boot $c ms," \
		"from a template $t ms: $(awk -v c="$c" -v t="$t" 'BEGIN { printf "%.2f", t / c }') of cold" \
		"($(awk -v c="$c" -v t="$t" 'BEGIN { printf "%.1f", c / t }')x faster)"
	echo "   cold: $(tr '\n' ' ' < "$TMP/cold")"
	echo "   template: $(tr '\n' ' ' < "$TMP/tmpl")"
	echo "   making the template (a session booted, saved, then restored for its command): $made ms;" \
		"templates on disk so far: $size MiB"
done

# The pool: 4 guests, cold and from the template (made above for the pool's shape: the
# daemon's sessions have a work directory, so its template is made by its first guest).
fill() { # ARGS...: ms until `bulkhead serve --pool 4 ARGS` has 4 ready guests
	sock=$TMP/s.sock
	rm -rf "$TMP/state" "$sock"
	t0=$(now_ns)
	"$BULKHEAD" serve --socket "$sock" --state "$TMP/state" --pool 4 "$@" 2> "$TMP/serve.log" &
	spid=$!
	until "$FDC" 3="$sock" -- sh -c 'printf "GET /v1/pool HTTP/1.1\r\nHost: serve\r\nConnection: close\r\n\r\n" >&3; cat <&3' 2> /dev/null |
		grep -q '"ready": *4'; do
		sleep 0.05
		kill -0 $spid 2> /dev/null || { echo "serve ended: $(tail -n 3 "$TMP/serve.log")" >&2; exit 1; }
	done
	awk -v a="$t0" -v b="$(now_ns)" 'BEGIN { printf "%.0f\n", (b - a) / 1e6 }'
	kill $spid; wait $spid 2> /dev/null
}
fill --template > /dev/null # the pool's shape's template
c=$(fill); t=$(fill --template)
echo "== serve --pool 4 filled: cold $c ms, from a template $t ms" \
	"($(awk -v c="$c" -v t="$t" 'BEGIN { printf "%.1f", c / t }')x faster;" \
	"$(awk -v c="$c" 'BEGIN { printf "%.2f", 4000 / c }') against $(awk -v t="$t" 'BEGIN { printf "%.2f", 4000 / t }') guests per second)"
