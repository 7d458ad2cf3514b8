#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The documents stay true to the tree, and the licence is stated: every file or folder path and every function the
# architecture, the threat model and the READMEs name in `backticks` exists. A path counts
# when it has a folder and an extension or ends in /; a function when written name() .
. "$(dirname "$0")/lib.sh"
cd "$(dirname "$0")/../.."
docs="docs/ARCHITECTURE.md docs/THREAT-MODEL.md docs/OCI.md docs/API.md README.md vmm/README.md vsock/README.md broker/README.md"
for doc in $docs; do
	[ -f "$doc" ] || continue
	missing=""
	# Paths: `dir/file.ext` or `dir/` (also inside longer backticked text), relative to the
	# top or to one of its folders (a folder's own table names its files so); bare file
	# names: some file of the tree has that name.
	for p in $(grep -o '`[^`]*`' "$doc" | tr -d '`' | tr ' ,()' '\n\n\n\n' |
		grep -E '^[A-Za-z0-9_./-]+(\.(c|h|sh|mk|md|S|ld|py|config|txt)|/)$' |
		grep -v '^/' | grep -v '^build' | grep -v '^~' | grep -v '^\.' | sort -u); do
		case $p in
		*/*)
			found=
			for top in . cli session jail lib broker vsock vmm guest image oci serve clients tests; do
				[ -e "$top/$p" ] && found=1
			done
			[ -n "$found" ] || missing="$missing $p"
			;;
		*) git ls-files | grep -qE "(^|/)$p\$" || missing="$missing $p" ;;
		esac
	done
	# Functions: `name()` must be defined somewhere in the sources.
	for f in $(grep -o '`[a-z_][a-z0-9_]*()`' "$doc" | tr -d '`()' | sort -u); do
		grep -rqE "^[a-z].*[ *]$f\(" --include='*.c' --include='*.h' \
			cli session jail lib broker vsock vmm guest image oci serve tests 2> /dev/null || missing="$missing $f()"
	done
	if [ -z "$missing" ]; then
		ok "$doc names only files and functions that exist"
	else
		not_ok "$doc names files or functions that do not exist" "$missing"
	fi
done
# The threat model and the architecture stay readable: no line over 400 characters (counted as
# bytes), so a claim's row fits a screen and prose stays wrapped (the threat model once had table
# cells of 9,000).
long=$(LC_ALL=C awk 'length($0) > 400 { print FILENAME ":" FNR ": " length($0) " characters" }' \
	docs/THREAT-MODEL.md docs/ARCHITECTURE.md 2>&1)
if [ -z "$long" ]; then
	ok "docs/THREAT-MODEL.md and docs/ARCHITECTURE.md have no line over 400 characters"
else
	not_ok "docs/THREAT-MODEL.md or docs/ARCHITECTURE.md has a line over 400 characters" "$long"
fi
# The licence: LICENSE at the top, and an SPDX line near the top of every source file.
unlicensed=$(git ls-files -- '*.c' '*.h' '*.S' '*.ld' '*.sh' '*.mk' '*.py' '*.config' Makefile .ci/run |
	while read -r f; do
		head -n 3 "$f" | grep -q 'SPDX-License-Identifier: Apache-2.0' || echo "$f"
	done)
if [ -f LICENSE ] && grep -q 'Apache License' LICENSE && [ -z "$unlicensed" ]; then
	ok "LICENSE is Apache-2.0 and every source file says so (SPDX)"
else
	not_ok "the licence is not stated everywhere" "${unlicensed:-LICENSE missing}"
fi
plan_done
