#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Image sessions against the initramfs session, in one run, interleaved:
#   bulkhead run -- true                         the default session (initramfs only)
#   bulkhead run --initrd initramfs-base.cpio -- true   the same without the tools layer (curl,
#                                                git: what an image session boots without)
#   bulkhead run --image PY -- true              the image root mounted, nothing read from it
#   bulkhead run --image PY -- python3 -c pass   Python's start through virtio-fs, cold
#   python3 -c pass on this host                 the same program without a VM
# and the image's build and import: `bulkhead image build` of the same recipe into a scratch
# store (time, size) and `bulkhead image import` of it back from an OCI archive.
# Prints medians and ratios. Usage: RUNS=10 bench/image-session.sh [--no-build]
set -eu
BUILD=${BUILD:-build}
RUNS=${RUNS:-10}
bin=$BUILD/bin/bulkhead
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
. "$(dirname "$0")/lib.sh"
ms() { echo $(( $(now_us) / 1000 )); }

py=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip)
echo "image sessions, $RUNS runs each, interleaved; image $py; $(nproc) cores"
for i in $(seq "$RUNS"); do
	for case in init base image python host; do
		t0=$(ms)
		case $case in
		init) "$bin" run -- true ;;
		base) "$bin" run --initrd "$BUILD/lib/bulkhead/initramfs-base.cpio" -- true ;;
		image) "$bin" run --image "$py" -- true ;;
		python) "$bin" run --image "$py" -- python3 -c pass ;;
		host) python3 -c pass ;;
		esac
		echo $(( $(ms) - t0 )) >> "$tmp/$case"
	done
done
init=$(median "$tmp/init")
for case in init base image python host; do
	m=$(median "$tmp/$case")
	case $case in
	init) what="bulkhead run -- true (initramfs)" ;;
	base) what="bulkhead run --initrd initramfs-base.cpio -- true" ;;
	image) what="bulkhead run --image $py -- true" ;;
	python) what="bulkhead run --image $py -- python3 -c pass" ;;
	host) what="python3 -c pass on the host" ;;
	esac
	awk -v w="$what" -v m="$m" -v i="$init" 'BEGIN { printf "%-58s median %6d ms  %5.2fx initramfs\n", w, m, m / i }'
done

[ "${1:-}" = --no-build ] && exit 0
# Build and import, into a scratch store: what a user waits for once per image.
export BULKHEAD_CACHE="$tmp/cache"
t0=$(ms)
"$bin" image build bench-py --packages python3,python3-requests > "$tmp/build.out" 2>&1 ||
	{ echo "bench: image build failed:" >&2; tail -n 5 "$tmp/build.out" >&2; exit 1; }
t1=$(ms)
root=$BULKHEAD_CACHE/images/names/bench-py/rootfs
size=$(du -sm "$root" | cut -f1)
echo "image build python3,python3-requests: $((t1 - t0)) ms, $size MiB ($(tail -n 1 "$tmp/build.out"))"
# The same root as a one-layer OCI archive (umoci's own layout), imported back.
umoci init --layout "$tmp/oci" > /dev/null
umoci new --image "$tmp/oci:py" > /dev/null
umoci unpack --image "$tmp/oci:py" "$tmp/bundle" > /dev/null
rm -rf "$tmp/bundle/rootfs" && cp -a "$root" "$tmp/bundle/rootfs"
umoci repack --image "$tmp/oci:py" "$tmp/bundle" > /dev/null
tar -C "$tmp/oci" -cf "$tmp/py-oci.tar" .
t0=$(ms)
"$bin" image import bench-py-imported "$tmp/py-oci.tar" > "$tmp/import.out" 2>&1 ||
	{ echo "bench: image import failed:" >&2; tail -n 5 "$tmp/import.out" >&2; exit 1; }
t1=$(ms)
echo "image import of it ($(($(stat -c %s "$tmp/py-oci.tar") >> 20)) MiB OCI archive): $((t1 - t0)) ms"
