#!/bin/sh
# Builds the guest kernel (vmlinux + bzImage) from Debian's linux-source-6.1 with
# our config fragment, cached outside the tree, keyed by everything that shapes it.
# Usage: kernel-config/build.sh OUTDIR   (OUTDIR gets vmlinux, bzImage, gen_init_cpio, config)
set -eu

here=$(cd "$(dirname "$0")" && pwd)
out=${1:?usage: build.sh OUTDIR}
tarball=/usr/src/linux-source-6.1.tar.xz
fragment=$here/bulkhead.config

die() { echo "kernel-config/build.sh: $*" >&2; exit 1; }
[ -r "$tarball" ] || die "$tarball missing: run 'make deps' (package linux-source-6.1)"

srcver=$(dpkg-query -W -f='${Version}' linux-source-6.1 2>/dev/null) || die "linux-source-6.1 is not installed: run 'make deps'"
ccver=$(${CC:-gcc} --version | head -n 1)
key=$( { cat "$fragment" "$0"; echo "$srcver"; echo "$ccver"; } | sha256sum | cut -c1-16)
cache=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}
dir=$cache/kernel/$key
mkdir -p "$cache/kernel" "$out"

publish() {
	for f in vmlinux bzImage gen_init_cpio config; do
		cp -f "$dir/$f" "$out/$f.tmp" && mv -f "$out/$f.tmp" "$out/$f"
	done
}

if [ -f "$dir/done" ]; then
	publish
	exit 0
fi

# One builder at a time per cache; a second caller waits, then reuses the result.
exec 9>"$cache/kernel/.lock"
flock 9
if [ -f "$dir/done" ]; then publish; exit 0; fi

src=$cache/kernel/src-$srcver
if [ ! -f "$src/.extracted" ]; then
	echo "kernel: extracting $tarball (once per source version)" >&2
	rm -rf "$src" && mkdir -p "$src"
	tar -xJf "$tarball" -C "$src" --strip-components=1
	touch "$src/.extracted"
fi

rm -rf "$dir" && mkdir -p "$dir"
obj=$dir/obj
echo "kernel: building $key from linux-source $srcver (several minutes, once)" >&2
start=$(date +%s)
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
echo "kernel: built in $(( $(date +%s) - start )) s" >&2
touch "$dir/done"
publish
