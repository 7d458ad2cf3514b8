#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `bulkhead template ls|rm` on a cache written by hand (no VM: making a real template needs
# KVM, and tests/nested/l1_templates.sh does that in L1): what ls says of a template whose
# name no longer follows from its recorded shape (stale), of one without a shape file and of
# one whose shape file is malformed; --json; rm by prefix, --stale and --all, and its
# refusals, which remove nothing.
. "$(dirname "$0")/lib.sh"
export BULKHEAD_CACHE="$TMP/cache"
T=$BULKHEAD_CACHE/templates

"$BULKHEAD" template ls > "$TMP/out" 2> "$TMP/err"
check_eq "ls with no cache yet: nothing, status 0" "0 " "$? $(cat "$TMP/out" "$TMP/err")"
check_eq "ls --json with no cache yet: []" "[]" "$("$BULKHEAD" template ls --json)"

mkdir -p "$T" && chmod 700 "$BULKHEAD_CACHE" "$T"
A=aaaaaaaa11111111aaaaaaaa11111111 B=aaaaaaaa22222222bbbbbbbb22222222 C=cccccccc33333333cccccccc33333333
for n in $A $B $C; do head -c 8192 /dev/urandom > "$T/$n.snap"; done
chmod 600 "$T"/*.snap
printf '{"mem_mib":512,"cpus":2,"cmdline":"console=ttyS0","kernel":"%s","initrd":"%s","fs":[true,false,true,false]}' \
	"$LIBDIR/vmlinux" "$LIBDIR/initramfs.cpio" > "$T/$A.json"
printf '{"mem_mib":"many"}' > "$T/$C.json"
: > "$T/notatemplate.snap"
: > "$T/$A.snap.123.tmp"
"$BULKHEAD" template ls > "$TMP/ls" 2> "$TMP/err"
check_eq "ls: one line per template, sorted, nothing else listed" "0 $A $B $C" \
	"$? $(cut -d' ' -f1 "$TMP/ls" | tr '\n' ' ' | sed 's/ $//')"
case $(grep "^$A " "$TMP/ls") in
*"512 MiB, 2 vCPUs, work, bind0"*"stale: its kernel, initramfs, bulkhead-vmm, host kernel or CPU changed")
	ok "ls: a template whose name no longer follows from its shape is stale, its shape shown" ;;
*) not_ok "ls: a stale template" "$(cat "$TMP/ls")" ;;
esac
grep -q "^$B .*no shape file" "$TMP/ls" && ok "ls: a template without a shape file says so" ||
	not_ok "ls: a template without a shape file says so" "$(cat "$TMP/ls")"
grep -q "^$C .*shape file is malformed" "$TMP/ls" && ok "ls: a malformed shape file says so" ||
	not_ok "ls: a malformed shape file says so" "$(cat "$TMP/ls")"
"$BULKHEAD" template ls --json > "$TMP/json"
got=$(python3 -c 'import json,sys
a = json.load(open(sys.argv[1]))
print(len(a), a[0]["mem_mib"], a[0]["cpus"], ",".join(a[0]["shares"]), a[0]["current"], a[0]["bytes"] >= 8192,
      "mem_mib" in a[1], a[1]["current"], a[0]["made"].endswith("Z"))' "$TMP/json" 2>&1)
check_eq "ls --json: the same, with the shape's fields" "3 512 2 work,bind0 False True False False True" "$got"

"$BULKHEAD" template rm aaaaaaaa > "$TMP/out" 2> "$TMP/err"
check_eq "rm with a prefix of two names: refused (125), nothing removed" "125 3" "$? $(ls "$T"/*.json "$T"/????????????????????????????????.snap | grep -c snap)"
grep -q "more than one template" "$TMP/err" && ok "... saying the prefix names more than one" ||
	not_ok "... saying the prefix names more than one" "$(cat "$TMP/err")"
"$BULKHEAD" template rm $B nosuch > "$TMP/out" 2> "$TMP/err"
check_eq "rm of a known and an unknown name: refused (125), nothing removed" "125 3 1" \
	"$? $(ls "$T" | grep -c '^[0-9a-f]*\.snap$') $(grep -c "no template 'nosuch'" "$TMP/err")"
"$BULKHEAD" template rm aaaaaaaa1 $A > "$TMP/out" 2> "$TMP/err"
check_eq "rm of one template named twice: removed with its shape file" "0 $B.snap $C.json $C.snap" \
	"$? $(ls "$T" | grep '^[0-9a-f]*\.\(snap\|json\)$' | tr '\n' ' ' | sed 's/ $//')"
"$BULKHEAD" template rm --stale > "$TMP/out" 2> "$TMP/err"
check_eq "rm --stale: every template no session will use (here all)" "0 " \
	"$? $(ls "$T" | grep '^[0-9a-f]*\.\(snap\|json\)$' | tr '\n' ' ')"
head -c 4096 /dev/urandom > "$T/$A.snap"
"$BULKHEAD" template rm --all > "$TMP/out" 2> "$TMP/err"
check_eq "rm --all: none left; what is not a template stays (a template being made too)" \
	"0 $A.snap.123.tmp notatemplate.snap" "$? $(ls "$T" | tr '\n' ' ' | sed 's/ $//')"
"$BULKHEAD" template rm > /dev/null 2>&1
check_eq "rm with nothing named: usage (125)" 125 "$?"
"$BULKHEAD" template frob > /dev/null 2> "$TMP/err"
check_eq "an unknown command: 125, naming the commands" "125 1" "$? $(grep -c '(ls, rm)' "$TMP/err")"
plan_done
