#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The guest kernel's recipe: Debian's linux-source tree SRC, tinyconfig plus our fragments,
# built out of tree for ARCH (x86_64, or arm64 with $CC a cross compiler); DIR gets the kernel
# (x86_64: vmlinux, debug info stripped, and bzImage; arm64: Image), gen_init_cpio and the final
# config. Its text is part of the cache key (build.sh): change it and the kernel is rebuilt;
# the cache handling in build.sh is not, so changing that costs no rebuild.
# Usage: kernel-config/compile.sh SRC DIR ARCH FRAGMENT...
set -eu
src=$1 dir=$2 arch=$3
shift 3
die() { echo "kernel-config/compile.sh: $*" >&2; exit 1; }

case $arch in
x86_64) kmake= targets="vmlinux bzImage" ;; # the kernel's own default, ARCH=x86: 64BIT from the fragment
arm64) kmake="ARCH=arm64 CROSS_COMPILE=${CC%gcc}" targets=Image ;;
*) die "no recipe for $arch" ;;
esac
obj=$dir/obj
# shellcheck disable=SC2086 # $kmake is a list of make variables
make -s -C "$src" O="$obj" $kmake tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$@" >/dev/null
# shellcheck disable=SC2086
make -s -C "$src" O="$obj" $kmake olddefconfig >/dev/null

# A fragment line that Kconfig silently dropped (unmet dependency) is a build error.
cat "$@" | grep -E '^(CONFIG_[A-Z0-9_]+=.*|# CONFIG_[A-Z0-9_]+ is not set)$' | while IFS= read -r want; do
	case $want in
	"# "*) opt=${want#\# }; opt=${opt%% *}
		grep -q "^$opt=" "$obj/.config" && die "$opt should be off but Kconfig turned it on" ;;
	*) grep -qxF "$want" "$obj/.config" || die "'$want' did not survive olddefconfig (missing dependency?)" ;;
	esac
done

# shellcheck disable=SC2086
make -s -C "$src" O="$obj" $kmake -j"$(nproc)" $targets KCFLAGS=-w >/dev/null
# The initramfs writer is a single host program; build it straight from the source tree.
${HOSTCC:-cc} -O2 -o "$obj/gen_init_cpio" "$src/usr/gen_init_cpio.c"
case $arch in
x86_64)
	cp "$obj/vmlinux" "$dir/vmlinux"
	cp "$obj/arch/x86/boot/bzImage" "$dir/bzImage"
	strip --strip-debug "$dir/vmlinux" 2>/dev/null || true ;;
arm64) cp "$obj/arch/arm64/boot/Image" "$dir/Image" ;;
esac
cp "$obj/gen_init_cpio" "$dir/gen_init_cpio"
cp "$obj/.config" "$dir/config"
rm -rf "$obj"
