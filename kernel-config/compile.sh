#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# The guest kernel's recipe: Debian's linux-source tree SRC, tinyconfig plus our fragment,
# built out of tree; DIR gets vmlinux (debug info stripped), bzImage, gen_init_cpio and the
# final config. Its text is part of the cache key (build.sh): change it and the kernel is
# rebuilt; the cache handling in build.sh is not, so changing that costs no rebuild.
# Usage: kernel-config/compile.sh SRC FRAGMENT DIR
set -eu
src=$1 fragment=$2 dir=$3
die() { echo "kernel-config/compile.sh: $*" >&2; exit 1; }

obj=$dir/obj
make -s -C "$src" O="$obj" tinyconfig >/dev/null
"$src/scripts/kconfig/merge_config.sh" -m -O "$obj" "$obj/.config" "$fragment" >/dev/null
make -s -C "$src" O="$obj" olddefconfig >/dev/null

# A fragment line that Kconfig silently dropped (unmet dependency) is a build error.
grep -E '^(CONFIG_[A-Z0-9_]+=.*|# CONFIG_[A-Z0-9_]+ is not set)$' "$fragment" | while IFS= read -r want; do
	case $want in
	"# "*) opt=${want#\# }; opt=${opt%% *}
		grep -q "^$opt=" "$obj/.config" && die "$opt should be off but Kconfig turned it on" ;;
	*) grep -qxF "$want" "$obj/.config" || die "'$want' did not survive olddefconfig (missing dependency?)" ;;
	esac
done

make -s -C "$src" O="$obj" -j"$(nproc)" vmlinux bzImage KCFLAGS=-w >/dev/null
# The initramfs writer is a single host program; build it straight from the source tree.
${HOSTCC:-cc} -O2 -o "$obj/gen_init_cpio" "$src/usr/gen_init_cpio.c"
cp "$obj/vmlinux" "$dir/vmlinux"
cp "$obj/arch/x86/boot/bzImage" "$dir/bzImage"
cp "$obj/gen_init_cpio" "$dir/gen_init_cpio"
cp "$obj/.config" "$dir/config"
strip --strip-debug "$dir/vmlinux" 2>/dev/null || true
rm -rf "$obj"
