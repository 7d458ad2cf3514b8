#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# A running broker's vault replaced on disk (broker/vault_live.h), host only: a shared broker
# serving two sessions takes a `bulkhead vault put` for the next request, on a connection kept
# alive across the change too, and no session ends; a damaged new file leaves the value before
# in use and is said once; a good file after it is taken again; a secret removed from the vault
# fails the requests that need it with a status naming the secret, never its value. What a
# red-team round found, each a check: a stream open across a change scrubs the new value; old
# and removed values are scrubbed on every connection; a value with blanks at its ends is
# scrubbed as the server reads it; a FIFO in the vault's place never hangs a request; a key put
# in place after `vault rotate-key` is taken; a control character never goes into a header.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
CLIENT=$BUILD/tests/proxy-client
RECORD=$(cd "$(dirname "$0")/../tools" && pwd)/record_upstream.py
KEEP=$(cd "$(dirname "$0")/../tools" && pwd)/keepalive_client.py
require "vault rotation" "$BROKER" "$CLIENT" python3
D=$TMP
export XDG_CONFIG_HOME="$D/cfg"
V="$XDG_CONFIG_HOME/bulkhead/vault"
V1='rot-ONE-7731-aa' V2='rot-TWO-7732-bb' V3='rot-THREE-7733-cc'
put() { printf '%s' "$1" | "$BULKHEAD" vault put PTOK > /dev/null 2> "$D/put.err"; }
"$BULKHEAD" vault init > /dev/null 2> "$D/put.err" && put "$V1" ||
	{ not_ok "vault init and put" "$(cat "$D/put.err")"; plan_done; exit 1; }

python3 "$RECORD" "$D/up.log" --echo > "$D/up.port" 2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")
cat > "$D/scope.json" << EOF2
{ "secrets": [ { "name": "PTOK", "inject": { "header": "X-Api-Key", "value": "{}" },
    "destinations": [ { "scheme": "http", "host": "127.0.0.1", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2
mkdir -m 700 "$D/audit"
"$BROKER" --control "$D/ctl.sock" --vault "$V" --audit-dir "$D/audit" 2> "$D/broker.log" &
bpid=$!
pids="$pids $bpid"
wait_socket "$D/ctl.sock" 5
broker_register "$D/ctl.sock" a "$D/scope.json" "$D/a.sock" "$D"
broker_register "$D/ctl.sock" b "$D/scope.json" "$D/b.sock" "$D"
URL="http://127.0.0.1:$PORT/api/x"
# key_of N: the X-Api-Key the upstream received with its Nth request.
key_of() { sed -n "${1}p" "$D/up.log" | tr '|' '\n' | sed -n 's/^ *X-Api-Key: //p' | tr -d ' '; }
# get SESSION [PATH]: one request on a connection of its own; the whole answer.
get() {
	printf 'GET http://127.0.0.1:%s%s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' \
		"$PORT" "${2:-/api/x}" | timeout 20 "$CLIENT" raw "$D/$1.sock"
}
# ask SESSION: the status line of get's answer.
ask() { get "$1" | head -n 1 | tr -d '\r'; }

# A connection kept alive across the change: its next request carries the new value.
mkfifo "$D/go"
python3 "$KEEP" "$D/a.sock" "$URL" "$D/go" > "$D/keep.out" 2> "$D/keep.err" &
kpid=$!
pids="$pids $kpid"
exec 7> "$D/go"
echo go >&7
i=0; while [ "$(wc -l < "$D/keep.out")" -lt 1 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
check_eq "the first request carries the value the broker started with" "$V1" "$(key_of 1)"
put "$V2" || not_ok "vault put of a new value" "$(cat "$D/put.err")"
echo go >&7
i=0; while [ "$(wc -l < "$D/keep.out")" -lt 2 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
check_eq "after vault put, the next request on the same kept-alive connection carries the new one" \
	"$V2" "$(key_of 2)"
check_eq "... answered 200 both times" "HTTP/1.1 200 OK
HTTP/1.1 200 OK" "$(cat "$D/keep.out")"
check_eq "the other session's next request carries it too" "HTTP/1.1 200 OK" "$(ask b)"
check_eq "... with the new value" "$V2" "$(key_of 3)"
grep -q "bulkhead-broker: vault $V changed: 1 entries in use from now" "$D/broker.log" &&
	ok "the broker says it took the new vault" ||
	not_ok "the broker says it took the new vault" "$(cat "$D/broker.log")"

# A damaged file in its place: the value before stays in use, said once.
cp "$V" "$D/good"
head -c 200 /dev/urandom > "$D/bad" && mv "$D/bad" "$V"
check_eq "with a damaged vault a request is still served" "HTTP/1.1 200 OK" "$(ask a)"
check_eq "... with the value loaded before" "$V2" "$(key_of 4)"
ask b > /dev/null
n=$(grep -c "changed but cannot be used" "$D/broker.log")
check_eq "the damaged file is said once, however many requests see it" 1 "$n"
grep -F "$V2" "$D/broker.log" "$D/keep.out" > /dev/null && not_ok "no value in the broker's words" ||
	ok "no value in the broker's words"
cp "$D/good" "$D/fixed" && mv "$D/fixed" "$V"
put "$V3" || not_ok "vault put after the repair" "$(cat "$D/put.err")"
echo go >&7
i=0; while [ "$(wc -l < "$D/keep.out")" -lt 3 ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
check_eq "a good file after a damaged one is taken: the kept-alive connection carries it" \
	"$V3" "$(key_of 6)"

# A secret removed: the requests that need it fail, naming it, never a value.
"$BULKHEAD" vault rm PTOK > /dev/null 2>&1
printf 'GET %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n' "$URL" |
	"$CLIENT" raw "$D/b.sock" > "$D/gone.out"
st=$(head -n 1 "$D/gone.out" | tr -d '\r')
case $st in
"HTTP/1.1 502"* | "HTTP/1.1 503"*)
	if grep -q PTOK "$D/gone.out" && ! grep -qF -e "$V1" -e "$V2" -e "$V3" "$D/gone.out"; then
		ok "a secret removed from the vault: $st, naming it and no value"
	else
		not_ok "a removed secret's answer names it, without a value" "$(cat "$D/gone.out")"
	fi ;;
*) not_ok "a removed secret fails its requests with 502 or 503" "$(cat "$D/gone.out")" ;;
esac
check_eq "nothing reached the upstream without its secret" 6 "$(wc -l < "$D/up.log")"
exec 7>&-

# The secret back: every value it held before stays scrubbed, on a connection that never
# carried any of them too.
V4='rot-FOUR-7734-dd' V5='rot-FIVE-7735-ee'
put "$V4" || not_ok "vault put after rm" "$(cat "$D/put.err")"
check_eq "the secret put back is served" "HTTP/1.1 200 OK" "$(ask a)"
get b /seen > "$D/seen.out"
if grep -q '^seen: \[bulkhead:redacted\]' "$D/seen.out" && ! grep -qF -e "$V1" -e "$V2" -e "$V3" -e "$V4" "$D/seen.out"; then
	ok "an upstream echoing every value it was ever given: none reaches a new connection"
else
	not_ok "old and removed values are scrubbed on a new connection" "$(cat "$D/seen.out")"
fi

# A stream open across a change: the new value, carried by another connection and echoed
# into the open stream, is scrubbed.
get a /stream > "$D/stream.out" &
spid=$!
i=0; while ! grep -q 'REQ GET /stream' "$D/up.log" && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
put "$V5" || not_ok "vault put under an open stream" "$(cat "$D/put.err")"
check_eq "under the open stream, another connection is served" "HTTP/1.1 200 OK" "$(ask a)"
check_eq "... with the new value" "$V5" "$(key_of "$(wc -l < "$D/up.log")")"
get b /release > /dev/null
wait "$spid"
if grep -q 'bulkhead:redacted' "$D/stream.out" &&
	! grep -qF -e "$V1" -e "$V2" -e "$V3" -e "$V4" -e "$V5" "$D/stream.out"; then
	ok "a stream open across a vault change scrubs the value taken after it began"
else
	not_ok "a stream open across a change scrubs the new value" "$(cat "$D/stream.out")"
fi

# A value with blanks at its ends: the server reads it without them; that echo is scrubbed.
V6='rot-SIX-7736-ff'
put "  $V6	 " || not_ok "vault put of a value with blanks" "$(cat "$D/put.err")"
check_eq "a value with blanks at its ends is served" "HTTP/1.1 200 OK" "$(ask a)"
get b /seen > "$D/seen6.out"
grep -qF "$V6" "$D/seen6.out" && not_ok "the value as the server read it is scrubbed" "$(cat "$D/seen6.out")" ||
	ok "the value as the server read it (blanks dropped) is scrubbed"

# A FIFO in the vault's place: requests are served with the values loaded before, at once.
cp "$V" "$D/good"
mkfifo "$D/fifo" && mv "$D/fifo" "$V"
check_eq "a FIFO renamed over the vault hangs no request" "HTTP/1.1 200 OK" "$(ask a)"
check_eq "... nor the other session's" "HTTP/1.1 200 OK" "$(ask b)"
grep -q "changed but cannot be used.*not a regular file" "$D/broker.log" &&
	ok "the FIFO is refused as not a regular file" ||
	not_ok "the FIFO is refused as not a regular file" "$(tail -n 3 "$D/broker.log")"
mv "$D/good" "$V"

# vault rotate-key: the broker keeps its key until a new one is in the key file's place; then
# it takes the file and the key together.
taken=$(grep -c 'entries in use from now' "$D/broker.log")
"$BULKHEAD" vault rotate-key --new-key-file "$D/new.key" > /dev/null 2> "$D/put.err" ||
	not_ok "vault rotate-key" "$(cat "$D/put.err")"
check_eq "after rotate-key, requests are served with the values loaded before" \
	"HTTP/1.1 200 OK" "$(ask a)"
mv "$D/new.key" "$V.key"
ask a > /dev/null
check_eq "with the new key in the key file's place, the file is taken" $((taken + 1)) \
	"$(grep -c 'entries in use from now' "$D/broker.log")"
V7='rot-SEVEN-7737-gg'
put "$V7" || not_ok "vault put under the new key" "$(cat "$D/put.err")"
check_eq "a put under the new key is served" "HTTP/1.1 200 OK" "$(ask a)"
check_eq "... with its value" "$V7" "$(key_of "$(wc -l < "$D/up.log")")"

# A control character other than tab never goes into a header.
n=$(wc -l < "$D/up.log")
printf 'rot-DEL-\177-\001' | "$BULKHEAD" vault put PTOK > /dev/null 2> "$D/put.err"
get a > "$D/ctl.out"
case $(head -n 1 "$D/ctl.out" | tr -d '\r') in
"HTTP/1.1 502"*) grep -q 'control character' "$D/ctl.out" &&
	ok "a value with DEL or 0x01 is refused for a header, saying why" ||
	not_ok "the refusal says why" "$(cat "$D/ctl.out")" ;;
*) not_ok "a value with DEL or 0x01 is refused for a header" "$(cat "$D/ctl.out")" ;;
esac
check_eq "... and nothing reached the upstream" "$n" "$(wc -l < "$D/up.log")"
kill -0 "$bpid" 2> /dev/null && ok "the broker serves on: no restart" || not_ok "the broker is alive"
for s in a b; do # still registered: the broker answers them (without the secret: 5xx)
	case $(ask "$s") in
	"HTTP/1.1 "*) ok "session $s is still served" ;;
	*) not_ok "session $s is still served" "$(tail -n 3 "$D/broker.log")" ;;
	esac
done
plan_done
