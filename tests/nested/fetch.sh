#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Fetches what L1 (the nested KVM host, tests/nested/README.md) is made of from Debian's apt
# sources, nothing installed on this host: Debian's cloud kernel and its KVM modules, and QEMU 10
# from bookworm-backports (the host's QEMU 7.2 is left as it is). A private apt state (its own
# sources list, lists and archives under the cache) resolves against this host's dpkg status, so
# exactly what the host lacks for QEMU 10 is fetched; each .deb is unpacked with dpkg -x.
# Cached by the content of this recipe: ${XDG_CACHE_HOME:-~/.cache}/bulkhead/nested/pkgs-<arch>-<key>,
# the two newest of each architecture kept.
# With --arch arm64, the arm64 host instead (tests/nested/arm64.sh): Debian's arm64 cloud
# kernel (KVM built in) under QEMU 10's qemu-system-aarch64, busybox-static:arm64 for its
# initramfs, and in arm64/ a sysroot of the arm64 libraries bulkhead-vmm links (`make
# ARCH=arm64` cross-builds against it).
# Usage: tests/nested/fetch.sh [--arch arm64]         prints the package directory (fetching it once)
#        tests/nested/fetch.sh [--arch arm64] --key   prints the cache key
# Exit 0 with the directory; 2 with one line when it cannot be fetched (no network); 1 on error.
set -eu
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
arch=amd64
[ "${1:-}" = --arch ] && { arch=$2; shift 2; }
cache=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/nested
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MIRROR=http://deb.debian.org/debian
# The kernel L1 boots (its metapackage names the versioned image) and the modules it loads (KVM,
# and overlayfs for image sessions; on arm64, KVM is built in and the modules are the guest's:
# virtio-mmio and virtio-fs); modules these depend on are found from their own modinfo and added.
KERNEL_META=linux-image-cloud-amd64
MODULES="kvm-amd overlay"
# QEMU 10: the host's 7.2 is not reliable as L1's TCG (tests/nested/README.md).
QEMU_PKGS="qemu-system-x86 qemu-system-common qemu-system-data"
QEMU_MAIN=qemu-system-x86
ARM64_PKGS= # arm64 packages unpacked into arm64/
HOST_TOOLS=
case $arch in
amd64) ;;
arm64)
	KERNEL_META=linux-image-cloud-arm64:arm64
	MODULES="virtio_mmio virtiofs"
	QEMU_PKGS="qemu-system-arm qemu-system-common qemu-system-data"
	QEMU_MAIN=qemu-system-arm
	# The arm64 sysroot `make ARCH=arm64` builds against (and the host's programs run with):
	# glibc and every library bulkhead links, with what they depend on; busybox for the host.
	ARM64_PKGS="busybox-static libc6-dev libseccomp-dev zlib1g-dev libfdt-dev libssl-dev
		libjansson-dev libhttp-parser-dev liburing-dev libmount-dev libwslay-dev
		libnghttp2-dev libexpat1-dev libmicrohttpd-dev libarchive-dev"
	# bookworm's qemu-aarch64-static (usr/bin/), unpacked, not installed: a cross build runs
	# the arm64 busybox once with it, to list its applets for the guest's initramfs.
	HOST_TOOLS=qemu-user-static ;;
*) echo "nested/fetch.sh: --arch amd64 or arm64, not $arch" >&2; exit 1 ;;
esac

sources() {
	cat <<EOF
deb [signed-by=$KEYRING] $MIRROR bookworm main
deb [signed-by=$KEYRING] $MIRROR bookworm-updates main
deb [signed-by=$KEYRING] http://deb.debian.org/debian-security bookworm-security main
deb [signed-by=$KEYRING] $MIRROR bookworm-backports main
EOF
}

key=$( { cat "$0"; sources; echo "$arch"; } | sha256sum | cut -c1-16)
[ "${1:-}" = --key ] && { echo "$key"; exit 0; }
dir=$cache/pkgs-$arch-$key
if [ -f "$dir/done" ]; then
	touch "$dir/done"
	echo "$dir"
	exit 0
fi

die() { echo "nested/fetch.sh: $*" >&2; exit 1; }
[ -r "$KEYRING" ] || die "$KEYRING missing: install debian-archive-keyring"
command -v apt-get > /dev/null && command -v dpkg > /dev/null || die "apt-get and dpkg are needed"
mkdir -p "$cache"
exec 9> "$cache/.fetch.lock"
flock 9
[ -f "$dir/done" ] && { echo "$dir"; exit 0; }

apt=$cache/apt-$arch
mkdir -p "$apt/lists/partial" "$apt/archives/partial" "$apt/etc"
sources > "$apt/etc/sources.list"
APT="-o Dir::State=$apt -o Dir::State::Lists=$apt/lists -o Dir::State::status=/var/lib/dpkg/status
     -o Dir::Cache=$apt -o Dir::Cache::Archives=$apt/archives -o Dir::Etc::SourceList=$apt/etc/sources.list
     -o Dir::Etc::SourceParts=/dev/null -o Dir::Etc::Preferences=/dev/null
     -o Dir::Etc::PreferencesParts=/dev/null -o APT::Sandbox::User=root -o Debug::NoLocking=1
     -o Acquire::Retries=2 -o Acquire::http::Timeout=20 -o APT::Architectures::=amd64
     -o APT::Architectures::=$arch"
# shellcheck disable=SC2086 # $APT is a list of options
if ! apt-get $APT update -qq > "$apt/update.log" 2>&1 || grep -q '^[WE]: Failed to fetch' "$apt/update.log"; then
	echo "cannot reach $MIRROR to fetch L1's packages ($(grep -m1 -E '^[WE]:' "$apt/update.log" || echo 'apt-get update failed'))" >&2
	exit 2
fi

tmp=$(mktemp -d "$cache/.fetch.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
mkdir -p "$tmp/debs" "$tmp/root" "$tmp/kernel"

# The kernel: the versioned image the metapackage depends on.
# shellcheck disable=SC2086
image=$(apt-cache $APT depends "$KERNEL_META" | sed -n 's/^ *Depends: \(linux-image-[^ ]*\)$/\1/p' | head -n 1)
[ -n "$image" ] || die "cannot tell which image $KERNEL_META depends on"
# QEMU 10 and whatever this host lacks for it (nothing, on a host with QEMU 7.2's libraries).
# shellcheck disable=SC2086
apt-get $APT -s -t bookworm-backports install --no-install-recommends $QEMU_PKGS > "$tmp/sim" 2>&1 ||
	die "cannot resolve QEMU 10 in bookworm-backports: $(tail -n 3 "$tmp/sim")"
qemu=$(sed -n 's/^Inst \([^ ]*\) .*(\([^ ]*\) .*/\1=\2/p' "$tmp/sim")
echo "$qemu" | grep -q "^$QEMU_MAIN=1:10\." || die "bookworm-backports offers no QEMU 10: $(grep "^Inst $QEMU_MAIN" "$tmp/sim")"
case $image in *:*) ;; *) [ "$arch" = amd64 ] || image=$image:$arch ;; esac
sysroot=
if [ -n "$ARM64_PKGS" ]; then
	# shellcheck disable=SC2086
	apt-get $APT -s install --no-install-recommends $(printf '%s:arm64 ' $ARM64_PKGS) > "$tmp/ssim" 2>&1 ||
		die "cannot resolve the arm64 sysroot: $(tail -n 3 "$tmp/ssim")"
	sysroot=$(sed -n 's/^Inst \([^ ]*:arm64\) .*/\1/p' "$tmp/ssim")
fi
(cd "$tmp/debs" && apt-get $APT download "$image" $qemu $sysroot $HOST_TOOLS > "$tmp/download.log" 2>&1) ||
	{ echo "cannot download L1's packages: $(grep -m1 -E '^[WE]:' "$tmp/download.log")" >&2; exit 2; }

for d in "$tmp"/debs/*.deb; do
	case $(basename "$d") in
	linux-image-*) dpkg -x "$d" "$tmp/kernel" ;;
	*_arm64.deb) dpkg -x "$d" "$tmp/root/arm64" ;;
	*) dpkg -x "$d" "$tmp/root" ;;
	esac
done
# arm64: the reference VMM of bench/arm64-boot.sh, run inside the arm64 host with KVM, and the
# virtiofsd tests/nested/arm64.sh serves a share with: bookworm's qemu-system-arm and
# qemu-system-common for arm64 and every arm64 library they load, in arm64-qemu/ (run through
# their own loader; documentation and the 32-bit system emulator left out).
if [ "$arch" = arm64 ]; then
	mkdir -p "$tmp/qdebs"
	# shellcheck disable=SC2086
	apt-get $APT -s install --no-install-recommends qemu-system-arm:arm64 qemu-system-common:arm64 > "$tmp/qsim" 2>&1 ||
		die "cannot resolve qemu-system-arm:arm64: $(tail -n 3 "$tmp/qsim")"
	qpkgs=$(sed -n 's/^Inst \([^ ]*:arm64\) .*/\1/p' "$tmp/qsim")
	# shellcheck disable=SC2086
	(cd "$tmp/qdebs" && apt-get $APT download $qpkgs > "$tmp/qdownload.log" 2>&1) ||
		{ echo "cannot download the arm64 QEMU: $(grep -m1 -E '^[WE]:' "$tmp/qdownload.log")" >&2; exit 2; }
	for d in "$tmp"/qdebs/*.deb; do dpkg -x "$d" "$tmp/root/arm64-qemu"; done
	q=$tmp/root/arm64-qemu
	rm -rf "$q/usr/share/doc" "$q/usr/share/man" "$q/usr/share/locale" "$q/usr/bin/qemu-system-arm"
	[ -x "$q/usr/bin/qemu-system-aarch64" ] && [ -x "$q/usr/lib/qemu/virtiofsd" ] ||
		die "the arm64 QEMU has no qemu-system-aarch64 or virtiofsd"
fi
kver=$(ls "$tmp/kernel/lib/modules")
mkdir -p "$tmp/root/l1/modules"
cp "$tmp/kernel/boot/vmlinuz-$kver" "$tmp/root/l1/vmlinuz"
# Modules with their dependencies, dependencies first (modules.order for insmod).
: > "$tmp/root/l1/modules.order"
add_module() { # NAME
	[ -e "$tmp/root/l1/modules/$1.ko" ] && return 0
	f=$(find "$tmp/kernel/lib/modules/$kver" -name "$1.ko" | head -n 1)
	[ -n "$f" ] || die "module $1 not in $image"
	# (sh has no local variables: $f is found again after the dependencies)
	for dep in $(strings "$f" | sed -n 's/^depends=//p' | tr ',' ' '); do add_module "$dep"; done
	f=$(find "$tmp/kernel/lib/modules/$kver" -name "$1.ko" | head -n 1)
	cp "$f" "$tmp/root/l1/modules/$1.ko"
	echo "$1" >> "$tmp/root/l1/modules.order"
}
for m in $MODULES; do add_module "$m"; done
{
	echo "kernel $image $kver"
	for d in "$tmp"/debs/*.deb; do dpkg-deb -f "$d" Package Version | paste -sd' '; done
} > "$tmp/root/l1/versions"

rm -rf "$dir"
mv "$tmp/root" "$dir"
touch "$dir/done"
# Keep the two most recent package sets of this architecture.
ls -dt "$cache"/pkgs-"$arch"-*/done 2> /dev/null | tail -n +3 | while IFS= read -r d; do rm -rf "${d%/done}"; done
echo "$dir"
