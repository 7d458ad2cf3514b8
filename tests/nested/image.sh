#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Builds L1's initramfs (tests/nested/README.md): Debian's cloud kernel modules for KVM (from
# fetch.sh), QEMU 10 and its firmware, this host's tools that the suites call (dash, coreutils,
# procps, script, openssl, virtiofsd, ...) with their shared libraries, busybox for the rest,
# and this build (programs, guest kernel and images, test guests and tools, the suites) under
# /bulkhead. Written by gen_init_cpio from a list, so nothing is copied to build it; cached by
# content: the key hashes the list and every file in it, the archive goes to
# ${XDG_CACHE_HOME:-~/.cache}/bulkhead/nested/img-<key>/l1.cpio beside L1's vmlinuz.
# Usage: tests/nested/image.sh PKGDIR   (BUILD=build) prints the image directory
set -eu
export LC_ALL=C

here=$(cd "$(dirname "$0")" && pwd)
top=$(cd "$here/../.." && pwd)
pkgs=${1:?usage: image.sh PKGDIR (from tests/nested/fetch.sh)}
BUILD=${BUILD:-build}
case $BUILD in /*) build=$BUILD ;; *) build=$top/$BUILD ;; esac
cache=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/nested
cpio_tool=$build/lib/bulkhead/gen_init_cpio
die() { echo "nested/image.sh: $*" >&2; exit 1; }
[ -x "$cpio_tool" ] || die "$cpio_tool missing: run make"
[ -f "$pkgs/l1/vmlinuz" ] || die "$pkgs is not a package directory from fetch.sh"

# This host's programs the suites and the jail call, as they are here (a package's whole list
# for the small ones the suites use all of).
HOST_PKGS="coreutils grep sed findutils procps diffutils mawk"
HOST_TOOLS="/usr/bin/dash /usr/bin/script /usr/bin/flock /usr/bin/setsid /usr/sbin/switch_root
	/usr/bin/openssl /usr/bin/timeout /usr/lib/qemu/virtiofsd /usr/bin/busybox"
KVM_GID=$(getent group kvm | cut -d: -f3)
KVM_GID=${KVM_GID:-990}
# The test tools the suites run inside L1 (unit test binaries stay out).
TEST_TOOLS="fd-connect https-echo proxy-client vhost-user-probe vhost-user-mute vsock-restart-probe
	frame-forge reap-check jail-probe scrub-probe snap-init"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/nested-image.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
list=$tmp/list

# entry TYPE DEST [SRC MODE]: one line of the list (parents are added at the end).
file() { printf 'file %s %s %s 0 0\n' "$1" "$2" "$3"; }
slink() { printf 'slink %s %s 0777 0 0\n' "$1" "$2"; }
mode() { printf '%04o' "0$(stat -c %a "$1")"; }

# put ROOT PATH: PATH as it is under ROOT ("" for this host), with every symlink on the way
# and what it points to; parents are canonical, so no entry is made through a symlink
# (/lib64 -> usr/lib64).
put() {
	_r=$1 _p=$2
	_d=$(dirname "$_p")
	_d=$(readlink -f "$_r$_d")
	_d=${_d#"$_r"}
	_p=${_d%/}/$(basename "$_p")
	if [ -L "$_r$_p" ]; then
		_t=$(readlink "$_r$_p")
		slink "$_p" "$_t"
		case $_t in /*) put "$_r" "$_t" ;; *) put "$_r" "$_d/$_t" ;; esac
	elif [ -f "$_r$_p" ]; then
		file "$_p" "$_r$_p" "$(mode "$_r$_p")"
	else
		die "$_r$_p is missing"
	fi
}
# libs FILE...: the shared-library closure of ELF files (ldd), the loader at its PT_INTERP path;
# QEMU 10's own libraries first, then this host's.
libs() {
	for f in "$@"; do
		[ "$(head -c 4 "$f" | tail -c 3)" = ELF ] || continue
		LD_LIBRARY_PATH=$pkgs/usr/lib/x86_64-linux-gnu ldd "$f" > "$tmp/ldd" 2>&1 || continue
		grep 'not found' "$tmp/ldd" >&2 && die "$f: the libraries above are missing"
		awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$tmp/ldd"
	done | sort -u
}

# with_libs: the list on stdin, then the libraries of every ELF file in it.
with_libs() {
	cat > "$tmp/part"
	cat "$tmp/part"
	# shellcheck disable=SC2046 # one argument per file
	for l in $(libs $(awk '$1 == "file" { print $3 }' "$tmp/part")); do
		case $l in
		"$pkgs"/*) put "$pkgs" "${l#"$pkgs"}" ;;
		*) put "" "$l" ;;
		esac
	done
}

# The part of L1 that comes from Debian (packages fetched, this host's tools): the same until
# the recipe, the package set or this host's packages change, so its list is kept in the cache
# (finding a few hundred files and their libraries takes most of the image's time), with the
# /etc files it makes.
host_part() {
	cat <<LIST
dir /dev 0755 0 0
nod /dev/console 0600 0 0 c 5 1
nod /dev/null 0666 0 0 c 1 3
dir /proc 0555 0 0
dir /sys 0555 0 0
dir /tmp 1777 0 0
dir /run 0755 0 0
dir /root 0700 0 0
dir /newroot 0755 0 0
dir /etc 0755 0 0
dir /usr 0755 0 0
dir /usr/bin 0755 0 0
dir /usr/sbin 0755 0 0
dir /usr/lib 0755 0 0
dir /usr/lib64 0755 0 0
slink /bin usr/bin 0777 0 0
slink /sbin usr/sbin 0777 0 0
slink /lib usr/lib 0777 0 0
slink /lib64 usr/lib64 0777 0 0
slink /usr/bin/sh dash 0777 0 0
LIST
	printf 'root:x:0:0:root:/root:/bin/sh\n' > "$hdir/etc/passwd"
	# kvm: /dev/kvm's group, as Debian's udev rules make it (a jailed QEMU gets it).
	printf 'root:x:0:\nkvm:x:%s:\n' "$KVM_GID" > "$hdir/etc/group"
	file /etc/passwd "$hdir/etc/passwd" 0644
	file /etc/group "$hdir/etc/group" 0644
	echo l1 > "$hdir/etc/hostname"
	file /etc/hostname "$hdir/etc/hostname" 0644
	# Names the suites resolve (localhost: the broker's upstreams), from files only.
	printf '127.0.0.1 localhost l1\n::1 localhost ip6-localhost ip6-loopback\n' > "$hdir/etc/hosts"
	printf 'passwd: files\ngroup: files\nhosts: files\n' > "$hdir/etc/nsswitch.conf"
	file /etc/hosts "$hdir/etc/hosts" 0644
	file /etc/nsswitch.conf "$hdir/etc/nsswitch.conf" 0644
	# OpenSSL's configuration (openssl req reads it).
	put "" /usr/lib/ssl/openssl.cnf
	# The KVM modules, in load order.
	file /usr/lib/nested/modules.order "$pkgs/l1/modules.order" 0644
	file /usr/lib/nested/versions "$pkgs/l1/versions" 0644
	for m in "$pkgs"/l1/modules/*.ko; do file "/usr/lib/nested/$(basename "$m")" "$m" 0644; done
	# QEMU 10 with the microvm firmware (the qemu engine inside L1, for bench/nested-*.sh).
	put "$pkgs" /usr/bin/qemu-system-x86_64
	put "$pkgs" /usr/share/seabios/bios-microvm.bin
	put "$pkgs" /usr/share/qemu/qboot.rom
	# This host's tools.
	for t in $(dpkg -L $HOST_PKGS | grep -E '^/usr/s?bin/[^/]+$|^/s?bin/[^/]+$'); do
		[ -f "$t" ] && [ -x "$t" ] && put "" "$(readlink -f "$(dirname "$t")")/$(basename "$t")"
	done
	for t in $HOST_TOOLS; do put "" "$t"; done
}
# This build and the suites, laid out as they expect it ($BUILD=build under /bulkhead).
project_part() {
	file /init "$here/init.sh" 0755
	for f in "$build"/bin/*; do file "/bulkhead/build/bin/$(basename "$f")" "$f" 0755; done
	for f in vmlinux bzImage initramfs.cpio initramfs-base.cpio bulkhead-init config gen_init_cpio; do
		file "/bulkhead/build/lib/bulkhead/$f" "$build/lib/bulkhead/$f" "$(mode "$build/lib/bulkhead/$f")"
	done
	for f in "$build"/lib/bulkhead/guests/*.bin; do
		file "/bulkhead/build/lib/bulkhead/guests/$(basename "$f")" "$f" 0755
	done
	for t in $TEST_TOOLS; do
		[ -x "$build/tests/$t" ] || die "$build/tests/$t missing: run make test-programs"
		file "/bulkhead/build/tests/$t" "$build/tests/$t" 0755
	done
	for f in "$top"/tests/e2e/*.sh "$top"/tests/nested/*.sh "$top"/bench/*.sh; do
		file "/bulkhead/${f#"$top"/}" "$f" 0644
	done
}

# One image builder at a time per cache (another waits, then finds its work done).
mkdir -p "$cache"
exec 8> "$cache/.image.lock"
flock 8
hostkey=$( { cat "$0"; echo "$pkgs"; stat -c '%s %Y' /var/lib/dpkg/status; } | sha256sum | cut -c1-16)
hdir=$cache/host-$hostkey
if [ ! -f "$hdir/list" ]; then
	rm -rf "$cache"/host-*
	mkdir -p "$hdir/etc"
	host_part | with_libs > "$hdir/list.tmp"
	mv "$hdir/list.tmp" "$hdir/list"
fi
{ cat "$hdir/list"; project_part | with_libs; } > "$list.1"

# busybox for every other command, in /usr/bin (its applets' own directories are merged).
bb=/usr/bin/busybox
"$bb" --list | awk -v list="$list.1" '
	BEGIN { while ((getline l < list) > 0) { split(l, f, " "); n = f[2]
		if (n ~ /^\/usr\/s?bin\/[^\/]+$/) { sub(/.*\//, "", n); have[n] = 1 } } }
	!($1 in have) { print "slink /usr/bin/" $1 " busybox 0777 0 0" }' >> "$list.1"

# Parents of every entry, then one line per path (a path listed two ways is a bug).
awk '{ n = split($2, c, "/"); p = ""; for (i = 2; i < n; i++) { p = p "/" c[i]; print "dir " p " 0755 0 0" } print }' \
	"$list.1" | awk '{ print $2 "\t" $0 }' | sort -u | cut -f2- | awk '
	$2 == prev { print "nested/image.sh: two entries for " $2 > "/dev/stderr"; bad = 1 }
	{ prev = $2; print } END { exit bad }' > "$list"

# The key: the list (names, modes, sources) and the bytes of every file in it.
key=$( { cat "$list"; awk '$1 == "file" { print $3 }' "$list" | xargs sha256sum; } | sha256sum | cut -c1-16)
dir=$cache/img-$key
if [ ! -f "$dir/done" ]; then
	mkdir -p "$dir"
	"$cpio_tool" -t 0 "$list" > "$dir/l1.cpio.tmp"
	mv "$dir/l1.cpio.tmp" "$dir/l1.cpio"
	cp "$pkgs/l1/vmlinuz" "$dir/vmlinuz"
	cp "$list" "$dir/list"
fi
touch "$dir/done"
# Keep the three most recent images.
ls -dt "$cache"/img-*/done 2> /dev/null | tail -n +4 | while IFS= read -r d; do rm -rf "${d%/done}"; done
echo "$dir"
