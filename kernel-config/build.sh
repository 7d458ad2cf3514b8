#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds the guest kernel from Debian's linux-source-6.1 with our config fragments
# (kernel-config/compile.sh), cached outside the tree, keyed by everything that shapes it: the
# fragments, the recipe, the source version, the compiler. x86_64 gives vmlinux and bzImage;
# arm64 (cross-compiled with gcc-aarch64-linux-gnu on another host) gives Image.
# The cache keeps the three most recently used builds and only the current source version's
# tree (1.5 GB); the rest is removed whenever the kernel is published.
# Usage: kernel-config/build.sh [--arch x86_64|arm64] OUTDIR   (OUTDIR gets the kernel,
#          gen_init_cpio and config)
#        kernel-config/build.sh [--arch x86_64|arm64] --key    (prints the cache key of this build)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
arch=$(uname -m)
[ "${1:-}" = --arch ] && { arch=$2; shift 2; }
out=${1:?usage: build.sh [--arch ARCH] OUTDIR | --key}
tarball=/usr/src/linux-source-6.1.tar.xz
die() { echo "kernel-config/build.sh: $*" >&2; exit 1; }
[ -r "$tarball" ] || die "$tarball missing: run 'make deps' (package linux-source-6.1)"

case $arch in
x86_64) kernels="vmlinux bzImage" cc=${CC:-gcc} ;;
arm64 | aarch64)
	arch=arm64 kernels=Image cc=gcc
	[ "$(uname -m)" = aarch64 ] || cc=aarch64-linux-gnu-gcc ;;
*) die "no guest kernel for $arch (x86_64 or arm64)" ;;
esac
fragments="$here/bulkhead.config $here/$arch.config"
command -v "$cc" > /dev/null || die "$cc missing: run 'make deps'"
srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) || die "linux-source-6.1 is not installed: run 'make deps'"
ccver=$($cc --version | head -n 1)
# shellcheck disable=SC2086 # a list of paths without spaces
key=$( { cat $fragments "$here/compile.sh"; echo "$srcver"; echo "$ccver"; } | sha256sum | cut -c1-16)
[ "$out" = --key ] && { echo "$key"; exit 0; }
cache=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}
dir=$cache/kernel/$key
src=$cache/kernel/src-$srcver
mkdir -p "$cache/kernel" "$out"

# Each use touches its build's done file: the newest three are kept, older builds and other
# source versions' trees go. A build still in progress has no done file and is left alone.
prune() {
	ls -dt "$cache"/kernel/*/done 2> /dev/null | tail -n +4 | while IFS= read -r d; do
		rm -rf "${d%/done}"
	done
	for s in "$cache"/kernel/src-*; do
		[ "$s" = "$src" ] || [ ! -e "$s" ] || rm -rf "$s"
	done
}

publish() {
	for f in $kernels gen_init_cpio config; do
		cp -f "$dir/$f" "$out/$f.tmp" && mv -f "$out/$f.tmp" "$out/$f"
	done
	touch "$dir/done"
	prune
}

if [ -f "$dir/done" ]; then
	publish
	exit 0
fi

# One builder at a time per cache; a second caller waits, then reuses the result.
exec 9>"$cache/kernel/.lock"
flock 9
if [ -f "$dir/done" ]; then publish; exit 0; fi

if [ ! -f "$src/.extracted" ]; then
	echo "kernel: extracting $tarball (once per source version)" >&2
	rm -rf "$src" && mkdir -p "$src"
	tar -xJf "$tarball" -C "$src" --strip-components=1
	touch "$src/.extracted"
fi

rm -rf "$dir" && mkdir -p "$dir"
echo "kernel: building $key ($arch) from linux-source $srcver (several minutes, once)" >&2
start=$(date +%s)
# shellcheck disable=SC2086
CC=$cc sh "$here/compile.sh" "$src" "$dir" "$arch" $fragments
echo "kernel: built in $(( $(date +%s) - start )) s" >&2
touch "$dir/done"
publish
