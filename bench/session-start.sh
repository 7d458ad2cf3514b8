#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Session start-to-exit latency: `bulkhead run -- true`, against the very engine
# command bulkhead runs (as `bulkhead run -v` prints it) started directly, minus
# its vsock device (whose back end only exists inside a session): the guest then
# boots, finds no host to serve and powers off. The reference shows what a
# session costs on top of booting the VM it runs in.
# Prints medians and their ratio. Usage: RUNS=20 bench/session-start.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-20}
bin=$BUILD/bin/bulkhead
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

. "$(dirname "$0")/lib.sh"
ms() { echo $(( $(now_us) / 1000 )); }

# Unjailed (--no-jail): the jailed command names paths inside the jail's root.
"$bin" run --no-jail -v -- true 2> "$tmp/verbose" > /dev/null
ref=$(sed -n 's/^bulkhead: engine command: //p' "$tmp/verbose")
engine=$(sed -n 's/^bulkhead: engine: //p' "$tmp/verbose")
[ -n "$ref" ] || { echo "bench: could not read the engine command from 'bulkhead run -v'" >&2; exit 1; }
# -v dropped 'quiet' from the kernel parameters; the measured runs have it.
ref=$(printf '%s' "$ref" | sed -e "s/'-append' 'console/'-append' 'quiet console/" \
	-e "s/ '-chardev' 'socket,id=vs0,[^']*' '-device' 'vhost-user-vsock-device[^']*'//")

echo "session start to exit, $RUNS runs each; engine: $engine; $(nproc) cores"
for i in $(seq "$RUNS"); do
	t0=$(ms)
	"$bin" run -- true
	t1=$(ms)
	eval "$ref" > "$tmp/ref.out" 2>&1 < /dev/null ||
		{ echo "bench: the reference command failed:" >&2; tail -n 5 "$tmp/ref.out" >&2; exit 1; }
	t2=$(ms)
	echo $((t1 - t0)) >> "$tmp/bulkhead"
	echo $((t2 - t1)) >> "$tmp/reference"
done
b=$(median "$tmp/bulkhead")
r=$(median "$tmp/reference")
printf '%-40s median %6s ms\n' "bulkhead run -- true" "$b"
printf '%-40s median %6s ms\n' "same engine command, direct (reference)" "$r"
awk -v b="$b" -v r="$r" 'BEGIN { printf "ratio bulkhead/reference: %.2f\n", b / r }'
