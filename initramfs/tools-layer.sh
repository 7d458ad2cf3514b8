#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Prints the gen_init_cpio lines of the guest's tools layer: this host's own curl and
# git (with the git-core helpers https remotes and local work need), their shared
# libraries and dynamic loader, git's templates, and the TLS layout whose CA bundle
# bulkhead-init writes at run time. Sorted, one line per path.
# Usage: initramfs/tools-layer.sh
set -eu
export LC_ALL=C

TOOLS="/usr/bin/curl /usr/bin/git"
# Outside the git binary: the https transport, and the shell parts of submodule,
# bisect and the octopus/resolve merge strategies. Every builtin's dashed name is
# added too (symlinks to git).
GIT_HELPERS="git-remote-http git-remote-https git-sh-setup git-sh-i18n
	git-sh-i18n--envsubst git-submodule git-bisect git-merge-octopus
	git-merge-one-file git-merge-resolve"
GIT_CORE=/usr/lib/git-core
TEMPLATES=/usr/share/git-core/templates

for t in $TOOLS; do
	[ -x "$t" ] || { echo "tools-layer: $t is missing on this host: install curl and git (make deps)" >&2; exit 1; }
done

out=$(mktemp)
trap 'rm -f "$out" "$out".*' EXIT

# put PATH: PATH as it is on the host, with its directories and every symlink on
# the way (and what it points to). Directories are canonical, so no entry is ever
# created through a symlink (/lib64 -> usr/lib64 on Debian 12's merged /usr).
put() (
	p=$1
	dir=$(dirname "$p")
	if [ "$dir" != / ]; then
		put "$dir"
		dir=$(readlink -f "$dir")
	fi
	p=${dir%/}/$(basename "$p")
	case $p in *[[:space:]]*) echo "tools-layer: '$p': spaces cannot be listed" >&2; exit 1 ;; esac
	if [ -L "$p" ]; then
		t=$(readlink "$p")
		echo "slink $p $t 0777 0 0"
		case $t in /*) put "$t" ;; *) put "$dir/$t" ;; esac
	elif [ -d "$p" ]; then
		echo "dir $p $(printf %04d "$(stat -c %a "$p")") 0 0"
	elif [ -f "$p" ]; then
		echo "file $p $p $(printf %04d "$(stat -c %a "$p")") 0 0"
	else
		echo "tools-layer: $p is missing on this host" >&2; exit 1
	fi
)

{
	for t in $TOOLS; do put "$t"; done
	for h in $GIT_HELPERS; do put "$GIT_CORE/$h"; done
	put "$GIT_CORE/git"
	for l in "$GIT_CORE"/git-*; do # as put would, without its forks for each
		if [ -L "$l" ] && [ "$(readlink "$l")" = git ]; then echo "slink $l git 0777 0 0"; fi
	done
	if [ -d "$TEMPLATES" ]; then
		find "$TEMPLATES" > "$out.tpl"
		while read -r f; do put "$f"; done < "$out.tpl"
	fi
} > "$out"

# The shared-library closure of every ELF file so far (ldd lists it transitively),
# the loader included at its PT_INTERP path.
awk '$1 == "file" { print $3 }' "$out" | sort -u > "$out.elf"
while read -r f; do
	[ "$(head -c 4 "$f" | tail -c 3)" = ELF ] || continue
	ldd "$f" > "$out.ldd" || { echo "tools-layer: ldd $f failed" >&2; exit 1; }
	if grep 'not found' "$out.ldd" >&2; then
		echo "tools-layer: $f: the libraries above are missing on this host" >&2; exit 1
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' "$out.ldd"
done < "$out.elf" > "$out.libs"
sort -u -o "$out.libs" "$out.libs"
while read -r l; do put "$l"; done < "$out.libs" >> "$out"

# TLS: OpenSSL's (curl) and GnuTLS's (git) default trust paths all lead to the one
# bundle bulkhead-init writes, which holds only the session CA: never the host's.
cat >> "$out" <<LIST
dir /etc 0755 0 0
dir /etc/ssl 0755 0 0
dir /etc/ssl/certs 0755 0 0
dir /usr/lib/ssl 0755 0 0
slink /usr/lib/ssl/cert.pem /etc/ssl/certs/ca-certificates.crt 0777 0 0
slink /usr/lib/ssl/certs /etc/ssl/certs 0777 0 0
LIST

# One line per path, parents first; a regular file whose bytes an earlier one
# already has (/usr/lib/git-core/git is /usr/bin/git) becomes a symlink to it.
awk '{ print $2 "\t" $0 }' "$out" | sort -u | cut -f2- | awk '
	$2 == prev { print "tools-layer: two different entries for " $2 > "/dev/stderr"; exit 1 }
	{ prev = $2; print }' > "$out.files"
while read -r type name rest; do
	if [ "$type" = file ]; then
		sum=$(sha256sum < "$name" | cut -c1-64)
		eval "first=\${seen_$sum:-}"
		if [ -n "$first" ]; then
			echo "slink $name $first 0777 0 0"; continue
		fi
		eval "seen_$sum=\$name"
	fi
	echo "$type $name $rest"
done < "$out.files"
