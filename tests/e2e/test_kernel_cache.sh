#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# The kernel cache (kernel-config/build.sh) stays bounded: publishing keeps the three most
# recently used builds and only the current source version's tree. Run on a copy of this
# build's cache entry with older entries beside it; nothing is compiled.
. "$(dirname "$0")/lib.sh"

key=$(sh kernel-config/build.sh --key 2> /dev/null)
real=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/kernel/$key
if [ -z "$key" ] || [ ! -f "$real/done" ]; then
	skip "kernel cache pruning" "this build's kernel is not in the cache (${real})"
	plan_done; exit 0
fi
cache=$TMP/cache
mkdir -p "$cache/kernel"
cp -r "$real" "$cache/kernel/$key"
# Five older builds, oldest first, and a source tree of another version.
i=1
for old in 0000000000000001 0000000000000002 0000000000000003 0000000000000004 0000000000000005; do
	mkdir "$cache/kernel/$old" && touch -d "@$((1700000000 + i * 60))" "$cache/kernel/$old/done"
	i=$((i + 1))
done
mkdir "$cache/kernel/0000000000000006" # being built: no done file yet
mkdir -p "$cache/kernel/src-0.0-old" "$cache/kernel/src-0.0-old/.extracted"
BULKHEAD_CACHE=$cache sh kernel-config/build.sh "$TMP/out" 2> "$TMP/err"
rc=$?
check_eq "a cached kernel is published without building" "0 0" "$rc $(grep -c building "$TMP/err")"
check_eq "its vmlinux is the cached one" "$(sha256sum < "$real/vmlinux")" "$(sha256sum < "$TMP/out/vmlinux")"
check_eq "the three most recently used builds stay (this one first), an unfinished one is left alone" \
	"0000000000000004 0000000000000005 0000000000000006 $key" \
	"$(ls "$cache/kernel" | grep -v '^src-' | sort | tr '\n' ' ' | sed 's/ $//')"
check_eq "another source version's tree is removed" "" "$(ls "$cache/kernel" | grep '^src-')"
plan_done
