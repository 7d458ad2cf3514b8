#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `python3 -c pass` in a container of the Python test image through real engines, with each
# OCI runtime, against `bulkhead run --image` of the same image, all in one run, interleaved:
#   podman run --rm IMAGE python3 -c pass           --runtime crun, runc, bulkhead-oci
#   ctr run --rm --runc-binary RT IMAGE ID python3 -c pass      (io.containerd.runc.v2 shim)
#   docker run --rm --runtime RT IMAGE python3 -c pass
#   bulkhead run --image NAME -- python3 -c pass
# bulkhead-oci's rows are left out, with a note, until $BUILD/bin/bulkhead-oci exists; an engine
# that cannot run here is left out with its reason (tests/tools/oci_engines.sh).
# Prints median and p90 wall times and the ratios bulkhead-oci / bulkhead run --image and
# bulkhead-oci / crun, and (bulkhead-oci - crun) / bulkhead run --image: the runtime's part, the
# engine's own work (its time with crun) taken out. Usage: RUNS=9 ENGINES="podman ctr docker" bench/oci-run.sh
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-9}
ENGINES=${ENGINES:-podman ctr docker}
bin=$BUILD/bin/bulkhead
oci=$(cd "$BUILD/bin" && pwd)/bulkhead-oci
. "$(dirname "$0")/lib.sh"
. tests/tools/oci_engines.sh
tmp=$(mktemp -d)
trap 'oci_dockerd_stop; oci_containerd_stop; oci_podman_stop; rm -rf "$tmp"' EXIT

py=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip)
rootfs=$(readlink -f "${BULKHEAD_CACHE:-$HOME/.cache/bulkhead}/images/names/$py")/rootfs
oci_refs "$tmp/rt"
runtimes="crun runc"
if [ -x "$oci" ]; then runtimes="$runtimes bulkhead-oci"; else note="$oci not built: no bulkhead-oci rows"; fi
rt_path() {
	case $1 in crun) echo "$OCI_CRUN" ;; runc) echo "$OCI_RUNC" ;; bulkhead-oci) echo "$oci" ;; esac
}

cases=bulkhead
for e in $ENGINES; do
	case $e in
	podman) oci_podman "$rootfs" 2> "$tmp/why" ;;
	ctr) { [ -n "${OCI_IMAGE:-}" ] || oci_podman "$rootfs"; } 2> "$tmp/why" && oci_containerd_start "$tmp/ctr" 2> "$tmp/why" ;;
	docker)
		# shellcheck disable=SC2046 # NAME PATH pairs are words
		{ [ -n "${OCI_IMAGE:-}" ] || oci_podman "$rootfs"; } 2> "$tmp/why" &&
			oci_dockerd_start "$tmp/docker" $(for r in $runtimes; do [ $r = runc ] || echo "$r $(rt_path $r)"; done) 2> "$tmp/why" ;;
	*) echo "unknown engine $e" > "$tmp/why"; false ;;
	esac || { echo "$e: left out: $(cat "$tmp/why")"; continue; }
	for r in $runtimes; do cases="$cases $e:$r"; done
done

# one CASE: runs it once; its wall time in ms goes to $tmp/CASE, a failure to $tmp/CASE.fail.
n=0
one() {
	n=$((n + 1))
	t0=$(now_us)
	case $1 in
	bulkhead) "$bin" run --image "$py" -- python3 -c pass ;;
	podman:*) oci_podman_cmd run --rm --runtime "$(rt_path "${1#*:}")" "$OCI_IMAGE" python3 -c pass ;;
	ctr:*) oci_ctr_run "$(rt_path "${1#*:}")" "bench-$n" python3 -c pass ;;
	docker:*) oci_docker_cmd run --rm --network none --runtime "${1#*:}" "$OCI_IMAGE" python3 -c pass ;;
	esac > /dev/null 2> "$tmp/err" < /dev/null || { echo "$1: $(tail -n 1 "$tmp/err")" >> "$tmp/$1.fail"; return; }
	echo $((($(now_us) - t0) / 1000)) >> "$tmp/$1"
}

echo "python3 -c pass in image $py, $RUNS runs each, interleaved; $(nproc) cores"
[ -z "${note:-}" ] || echo "note: $note"
i=0
while [ $i -lt "$RUNS" ]; do
	for c in $cases; do one "$c"; done
	i=$((i + 1))
done

med() { [ -s "$tmp/$1" ] && median "$tmp/$1"; }
base=$(med bulkhead) || base=
for c in $cases; do
	case $c in
	bulkhead) what="bulkhead run --image $py" ;;
	podman:*) what="podman run --rm --runtime ${c#*:}" ;;
	ctr:*) what="ctr run --rm --runc-binary ${c#*:}" ;;
	docker:*) what="docker run --rm --runtime ${c#*:}" ;;
	esac
	fails=$(cat "$tmp/$c.fail" 2> /dev/null | wc -l)
	if ! m=$(med "$c"); then
		echo "$what: no run succeeded: $(tail -n 1 "$tmp/$c.fail")"
		continue
	fi
	extra=
	case $c in
	*:bulkhead-oci)
		crun=$(med "${c%:*}:crun") && extra=$(awk -v m="$m" -v c="$crun" 'BEGIN { printf "  %5.2fx crun", m / c }')
		# The engine's own work is what it costs with crun: less that, what is left of the
		# bulkhead-oci row is the runtime's, against bulkhead run --image doing the same.
		[ -z "$base" ] || extra="$extra$(awk -v m="$m" -v b="$base" -v c="${crun:-0}" \
			'BEGIN { printf "  %5.2fx bulkhead run", m / b; if (c > 0) printf "  (less the engine: %4.2fx)", (m - c) / b }')" ;;
	esac
	printf '%-44s median %6.0f ms  p90 %6.0f ms%s%s\n' "$what" "$m" "$(percentile 90 "$tmp/$c")" "$extra" \
		"$([ "$fails" -eq 0 ] || echo "  ($fails failed: $(tail -n 1 "$tmp/$c.fail"))")"
done
