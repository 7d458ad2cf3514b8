#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# End to end (host only, no VM): `bulkhead vault` round trip with values only on stdin and never
# in any output, kill -9 at random points of `vault put` never costs the previous vault, a
# tampered vault is refused and left unchanged, loose key files are refused; `audit verify`.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BULKHEAD" ]; then
	skip "vault and audit" "bulkhead not built (run make)"
	plan_done; exit 0
fi
export XDG_CONFIG_HOME="$TMP/cfg"
V="$XDG_CONFIG_HOME/bulkhead/vault"
K="$V.key"
SECRET="e2e-S3CRET-$$-value"

# never_shows NAME: the secret is in none of the last command's outputs.
never_shows() {
	if grep -qF "$SECRET" "$TMP/out" "$TMP/err"; then
		not_ok "$1" "stdout: $(cat "$TMP/out")" "stderr: $(cat "$TMP/err")"
	else ok "$1"; fi
}
# vput NAME [OPTS...] < value: sets $rc (so never call it at the end of a pipe: a subshell)
vput() { "$BULKHEAD" vault put "$@" > "$TMP/out" 2> "$TMP/err"; rc=$?; }
# putv VALUE NAME [OPTS...]: the value through a file on stdin
putv() { printf '%s' "$1" > "$TMP/v"; shift; vput "$@" < "$TMP/v"; }
mode() { stat -c %a "$1"; }
hash() { sha256sum "$1" | cut -d' ' -f1; }

# --- init, put, list, rm -------------------------------------------------------------------
run_capture vault init
check_eq "init exits 0" 0 "$rc"
check_eq "vault file is 0600" 600 "$(mode "$V")"
check_eq "new key file is 0600" 600 "$(mode "$K")"
check_eq "vault directory is 0700" 700 "$(mode "$(dirname "$V")")"
run_capture vault init
check_eq "init over an existing vault is refused (125)" 125 "$rc"

putv "$SECRET
" GITHUB_TOKEN
check_eq "put from stdin exits 0" 0 "$rc"
never_shows "put does not print the value"
run_capture vault list
check_eq "list exits 0" 0 "$rc"
grep -q "^GITHUB_TOKEN  *${#SECRET} bytes" "$TMP/out" && ok "list shows the name and size (newline dropped)" ||
	not_ok "list shows the name and size (newline dropped)" "$(cat "$TMP/out")"
never_shows "list does not print the value"
grep -qF "$SECRET" "$V" && not_ok "the vault file holds no plaintext" || ok "the vault file holds no plaintext"

printf '%s' "$SECRET" > "$TMP/valfile"
vput other.key --from-file "$TMP/valfile"
check_eq "put --from-file exits 0" 0 "$rc"
"$BULKHEAD" vault put NAME "$SECRET" < /dev/null > "$TMP/out" 2> "$TMP/err"; rc=$?
check_eq "a value on the command line is refused (125)" 125 "$rc"
never_shows "the refusal does not echo the value"
"$BULKHEAD" vault put "--value=$SECRET" < /dev/null > "$TMP/out" 2> "$TMP/err"; rc=$?
never_shows "an unknown option is not echoed"
putv x '../x'
check_eq "a bad name is refused (125)" 125 "$rc"
vput EMPTY < /dev/null
check_eq "an empty value is refused (125)" 125 "$rc"
run_capture vault rm other.key
check_eq "rm exits 0" 0 "$rc"
run_capture vault list
grep -q other.key "$TMP/out" && not_ok "rm removed the name" "$(cat "$TMP/out")" || ok "rm removed the name"
run_capture vault rm other.key
check_eq "rm of a missing name exits 125" 125 "$rc"

# --- key files -----------------------------------------------------------------------------
chmod 644 "$K"
run_capture vault list
check_eq "a 0644 key file is refused (125)" 125 "$rc"
grep -q "chmod 600" "$TMP/err" && ok "the refusal says how to fix it" || not_ok "the refusal says how to fix it" "$(cat "$TMP/err")"
chmod 600 "$K"
head -c 64 /dev/urandom | od -An -tx1 | tr -d ' \n' | head -c 64 > "$TMP/wrong.key"
chmod 600 "$TMP/wrong.key"
run_capture vault list --key-file "$TMP/wrong.key"
check_eq "a wrong key is refused (125)" 125 "$rc"
[ "$(wc -l < "$TMP/err")" -eq 1 ] && grep -q "wrong key" "$TMP/err" && ok "one line: wrong key or changed file" ||
	not_ok "one line: wrong key or changed file" "$(cat "$TMP/err")"

# --- tampering -----------------------------------------------------------------------------
# flip_byte FILE OFFSET: inverts every bit of that byte, so it always changes (writing a fixed
# value left it as it was whenever the byte already held that value).
flip_byte() {
	_b=$(od -An -tu1 -j "$2" -N1 "$1" | tr -d ' ')
	printf "$(printf '\\%03o' $((_b ^ 255)))" | dd of="$1" bs=1 seek="$2" conv=notrunc 2> /dev/null
}
cp "$V" "$TMP/good"
size=$(stat -c %s "$V")
for off in 3 30 $((size / 2)) $((size - 1)); do
	cp "$TMP/good" "$V"
	flip_byte "$V" "$off"
	before=$(hash "$V")
	putv new GITHUB_TOKEN
	after=$(hash "$V")
	if [ "$rc" -eq 125 ] && [ "$before" = "$after" ]; then ok "byte $off changed: put refused, file unchanged"
	else not_ok "byte $off changed: put refused, file unchanged" "rc=$rc $(cat "$TMP/err")"; fi
done
head -c $((size - 7)) "$TMP/good" > "$V"
before=$(hash "$V")
putv new GITHUB_TOKEN
check_eq "truncated vault: put refused" 125 "$rc"
check_eq "truncated vault: file unchanged" "$before" "$(hash "$V")"
cp "$TMP/good" "$V"

# --- kill -9 during put --------------------------------------------------------------------
mkfifo "$TMP/fifo"
before=$(hash "$V")
"$BULKHEAD" vault put WAITING < "$TMP/fifo" > /dev/null 2>&1 &
pid=$!
exec 3> "$TMP/fifo"
printf 'partial' >&3
sleep 0.3
kill -9 "$pid"; wait "$pid" 2> /dev/null
exec 3>&-
check_eq "kill -9 while put reads stdin: vault unchanged" "$before" "$(hash "$V")"

# Random kill points: every time, the vault must open and hold the old or the new value.
head -c 60000 /dev/zero | tr '\0' a > "$TMP/big"
putv a LOOP
prev=1 news=0 olds=0 bad=0
i=0
while [ $i -lt 40 ]; do
	i=$((i + 1))
	want=$((30000 + i * 500))
	head -c "$want" "$TMP/big" > "$TMP/val"
	"$BULKHEAD" vault put --raw LOOP < "$TMP/val" > /dev/null 2>&1 &
	pid=$!
	sleep "0.00$(awk -v s="$i$$" 'BEGIN { srand(s); printf "%d", rand() * 99 }')"
	kill -9 "$pid" 2> /dev/null; wait "$pid" 2> /dev/null
	"$BULKHEAD" vault list > "$TMP/out" 2> "$TMP/err" || { bad=$((bad + 1)); continue; }
	got=$(awk '$1 == "LOOP" { print $2 }' "$TMP/out")
	if [ "$got" = "$want" ]; then news=$((news + 1)); prev=$want
	elif [ "$got" = "$prev" ]; then olds=$((olds + 1))
	else bad=$((bad + 1)); fi
done
check_eq "40 random kill -9s during put: vault always opens with old or new value" 0 "$bad"
echo "# kill points: $olds left the old value, $news the new one"
putv z LOOP
ls -a "$(dirname "$V")" | grep -q '^\.vault\.' && not_ok "the next put removes killed writers' temp files" "$(ls -a "$(dirname "$V")")" ||
	ok "the next put removes killed writers' temp files"

# --- rotate-key ----------------------------------------------------------------------------
run_capture vault rotate-key --new-key-file "$TMP/new.key"
check_eq "rotate-key to a new key file exits 0" 0 "$rc"
check_eq "the new key file is 0600" 600 "$(mode "$TMP/new.key")"
run_capture vault list
check_eq "the old key no longer opens the vault" 125 "$rc"
run_capture vault list --key-file "$TMP/new.key"
grep -q '^GITHUB_TOKEN' "$TMP/out" && ok "the new key opens it with the same secrets" ||
	not_ok "the new key opens it with the same secrets" "$(cat "$TMP/out" "$TMP/err")"
printf 'a long passphrase for e2e\n' > "$TMP/pass"; chmod 600 "$TMP/pass"
run_capture vault rotate-key --key-file "$TMP/new.key" --new-passphrase-file "$TMP/pass"
check_eq "rotate-key to a passphrase exits 0" 0 "$rc"
run_capture vault list --passphrase-file "$TMP/pass"
grep -q '^GITHUB_TOKEN' "$TMP/out" && ok "the passphrase opens it" ||
	not_ok "the passphrase opens it" "$(cat "$TMP/out" "$TMP/err")"

# --- audit verify (a log built here with sha256sum, independent of the writer) --------------
prev=$(printf 'bulkhead audit log v1' | sha256sum | cut -d' ' -f1)
: > "$TMP/audit.log"
for n in 1 2 3 4 5; do
	line="{\"v\":1,\"time\":\"2024-01-01T00:00:0$n.000Z\",\"session\":\"s1\",\"method\":\"GET\",\"host\":\"api.example\",\"port\":443,\"path\":\"/x/$n\",\"rule\":\"r\",\"secret\":\"GITHUB_TOKEN\",\"decision\":\"allow\",\"status\":200,\"bytes_out\":1,\"bytes_in\":2,\"duration_us\":3,\"prev\":\"$prev\"}"
	printf '%s\n' "$line" >> "$TMP/audit.log"
	prev=$(printf '%s' "$line" | sha256sum | cut -d' ' -f1)
done
run_capture audit verify "$TMP/audit.log"
check_eq "audit verify: intact log exits 0" 0 "$rc"
grep -q "5 lines, chain intact, head $prev" "$TMP/out" && ok "audit verify: reports lines and head" ||
	not_ok "audit verify: reports lines and head" "$(cat "$TMP/out")"
sed '3s#/x/3#/x/9#' "$TMP/audit.log" > "$TMP/edited.log"
run_capture audit verify "$TMP/edited.log"
check_eq "audit verify: edited line 3 exits 1" 1 "$rc"
grep -q "edited.log:4: chain broken" "$TMP/out" && ok "audit verify: first broken link is line 4" ||
	not_ok "audit verify: first broken link is line 4" "$(cat "$TMP/out")"
sed '2d' "$TMP/audit.log" > "$TMP/deleted.log"
run_capture audit verify "$TMP/deleted.log"
grep -q "deleted.log:2: chain broken" "$TMP/out" && ok "audit verify: deleted line 2 is found at line 2" ||
	not_ok "audit verify: deleted line 2 is found at line 2" "$(cat "$TMP/out")"
run_capture audit verify "$TMP/missing.log"
check_eq "audit verify: a missing file exits 125" 125 "$rc"

plan_done
