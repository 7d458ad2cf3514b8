#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# `bulkhead template ls|rm` on a cache written by hand (no VM: making a real template needs
# KVM, and tests/nested/l1_templates.sh does that in L1): what ls says of a template whose
# recorded kernel is gone, of one whose name no longer follows from its shape, of one without
# a shape file, with a malformed one, a FIFO or a link for one, and of a file others may read;
# --json; rm by prefix, --stale (never what cannot be judged) and --all, and its refusals,
# which remove nothing; a templates directory that is a link, or open to others, is refused.
. "$(dirname "$0")/lib.sh"
export BULKHEAD_CACHE="$TMP/cache"
T=$BULKHEAD_CACHE/templates

"$BULKHEAD" template ls > "$TMP/out" 2> "$TMP/err"
check_eq "ls with no cache yet: nothing, status 0" "0 " "$? $(cat "$TMP/out" "$TMP/err")"
check_eq "ls --json with no cache yet: []" "[]" "$("$BULKHEAD" template ls --json)"

mkdir -p "$T" && chmod 700 "$BULKHEAD_CACHE" "$T"
A=aaaaaaaa11111111aaaaaaaa11111111 B=aaaaaaaa22222222bbbbbbbb22222222
C=cccccccc33333333cccccccc33333333 D=dddddddd44444444dddddddd44444444
E=eeeeeeee55555555eeeeeeee55555555 F=ffffffff66666666ffffffff66666666
G=0000000077777777000000007777777a
for n in $A $B $C $D $E $F $G; do head -c 8192 /dev/urandom > "$T/$n.snap"; done
chmod 600 "$T"/*.snap
chmod 644 "$T/$G.snap"
shape() { # KERNEL: a shape file's text
	printf '{"mem_mib":512,"cpus":2,"cmdline":"console=ttyS0","kernel":"%s","initrd":"%s","fs":[true,false,true,false]}' \
		"$1" "$LIBDIR/initramfs.cpio"
}
shape "$LIBDIR/vmlinux" > "$T/$A.json"
shape "$TMP/no-such-kernel" > "$T/$F.json"
printf '{"mem_mib":"many"}' > "$T/$C.json"
mkfifo "$T/$D.json" # a FIFO nobody writes: read, it would never end
ln -s /dev/zero "$T/$E.json"
: > "$T/notatemplate.snap"
: > "$T/$A.snap.123.tmp"
timeout 20 "$BULKHEAD" template ls > "$TMP/ls" 2> "$TMP/err"
check_eq "ls: one line per template, sorted, nothing else listed" "0 $G $A $B $C $D $E $F" \
	"$? $(cut -d' ' -f1 "$TMP/ls" | tr '\n' ' ' | sed 's/ $//')"
# With KVM the recorded inputs give another name (stale); without, the CPU part cannot be
# asked, so it cannot be judged (unknown).
if [ -e /dev/kvm ]; then want="stale: its kernel, initramfs, bulkhead-vmm, host kernel or CPU changed"
else want="unknown: cannot ask KVM for this host's CPU"; fi
case $(grep "^$A " "$TMP/ls") in
*"512 MiB, 2 vCPUs, work, bind0"*"$want"*) ok "ls: a template whose name cannot follow from its shape here: $want" ;;
*) not_ok "ls: a template whose name cannot follow from its shape here" "$(cat "$TMP/ls")" ;;
esac
grep -q "^$F .*stale: its kernel, initramfs or bulkhead-vmm is gone" "$TMP/ls" &&
	ok "ls: a template whose kernel is gone is stale, saying so" || not_ok "ls: a template whose kernel is gone" "$(cat "$TMP/ls")"
grep -q "^$B .*stale: no shape file" "$TMP/ls" && ok "ls: a template without a shape file is stale (an older bulkhead's)" ||
	not_ok "ls: a template without a shape file" "$(cat "$TMP/ls")"
grep -q "^$G .*stale: not ours, or others may read it" "$TMP/ls" && ok "ls: a template others may read is stale: sessions refuse it" ||
	not_ok "ls: a template others may read" "$(cat "$TMP/ls")"
[ "$(grep -c "^\($C\|$D\|$E\) .*unknown: its shape file is malformed" "$TMP/ls")" = 3 ] &&
	ok "ls: a malformed shape file, a FIFO and a link to /dev/zero are not read: unknown" ||
	not_ok "ls: malformed, FIFO and /dev/zero shape files" "$(cat "$TMP/ls")"
"$BULKHEAD" template ls --json > "$TMP/json"
got=$(python3 -c 'import json,sys
t = {e["name"]: e for e in json.load(open(sys.argv[1]))}
a, f, c = (t[n] for n in sys.argv[2:5])
print(len(t), a["mem_mib"], a["cpus"], ",".join(a["shares"]), a["current"], a["bytes"] >= 8192,
      a["made"].endswith("Z"), f["state"], c["state"], "mem_mib" in c)' "$TMP/json" $A $F $C 2>&1)
check_eq "ls --json: the same, with the shape's fields and each state" "7 512 2 work,bind0 False True True stale unknown False" "$got"

"$BULKHEAD" template rm aaaaaaaa > "$TMP/out" 2> "$TMP/err"
check_eq "rm with a prefix of two names: refused (125), saying so, nothing removed" "125 1 7" \
	"$? $(grep -c "more than one template" "$TMP/err") $(ls "$T" | grep -c '^[0-9a-f]*\.snap$')"
"$BULKHEAD" template rm $B nosuch > "$TMP/out" 2> "$TMP/err"
check_eq "rm of a known and an unknown name: refused (125), nothing removed" "125 7 1" \
	"$? $(ls "$T" | grep -c '^[0-9a-f]*\.snap$') $(grep -c "no template 'nosuch'" "$TMP/err")"
"$BULKHEAD" template rm ffffffff6 $F > "$TMP/out" 2> "$TMP/err"
check_eq "rm of one template named twice: removed with its shape file" "0 0" \
	"$? $(ls "$T" | grep -c "^$F")"
"$BULKHEAD" template rm --stale > "$TMP/out" 2> "$TMP/err"
[ -e /dev/kvm ] && left="$C $D $E" || left="$A $C $D $E"
check_eq "rm --stale: what no session will use goes, what cannot be judged stays" "0 $left" \
	"$? $(ls "$T" | sed -n 's/^\([0-9a-f]*\)\.snap$/\1/p' | tr '\n' ' ' | sed 's/ $//')"
"$BULKHEAD" template rm --all > "$TMP/out" 2> "$TMP/err"
check_eq "rm --all: none left; what is not a template stays (a template being made too)" \
	"0 $A.snap.123.tmp notatemplate.snap" "$? $(ls "$T" | grep -v json$ | tr '\n' ' ' | sed 's/ $//')"

# The directory itself: a link (to another directory of templates), or one others may enter.
mkdir -p "$TMP/elsewhere" && chmod 700 "$TMP/elsewhere"
: > "$TMP/elsewhere/$A.snap" && chmod 600 "$TMP/elsewhere/$A.snap"
mv "$T" "$TMP/old-templates" && ln -s "$TMP/elsewhere" "$T"
"$BULKHEAD" template rm --all > "$TMP/out" 2> "$TMP/err"
check_eq "a templates directory that is a link: rm refused (125), nothing removed there" "125 1 1" \
	"$? $(ls "$TMP/elsewhere" | wc -l) $(grep -c 'must be a directory of uid .*, mode 0700' "$TMP/err")"
"$BULKHEAD" template ls > "$TMP/out" 2> "$TMP/err"
check_eq "... and ls refused too" 125 "$?"
rm "$T" && mkdir -m 755 "$T"
"$BULKHEAD" template ls > "$TMP/out" 2> "$TMP/err"
check_eq "a templates directory others may enter: refused (125)" "125 1" "$? $(grep -c 'mode 0700' "$TMP/err")"

"$BULKHEAD" template rm > /dev/null 2>&1
check_eq "rm with nothing named: usage (125)" 125 "$?"
"$BULKHEAD" template frob > /dev/null 2> "$TMP/err"
check_eq "an unknown command: 125, naming the commands" "125 1" "$? $(grep -c '(ls, rm)' "$TMP/err")"
plan_done
