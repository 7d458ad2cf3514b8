#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_scrub_oracle.sh: the response scrubber through the real broker, host only.
# A guest (tests/tools/scrub_probe.c) sends guesses for an allow-listed echo upstream to
# repeat and watches everything it can (status, chunk sizes, bytes before the upstream's
# pause, total, times): a true prefix of a secret, or of its base64, must look exactly like a
# wrong guess, and the character-by-character attack must recover nothing. Then the secret's
# own destination echoes it in every encoding the scrubber claims, plain and compressed:
# scrubbed, or refused with a 502 when the broker cannot read the body.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
TOOLS=$(cd "$BUILD/tests" 2> /dev/null && pwd)
ECHO=$TOOLS/https-echo
CLIENT=$TOOLS/proxy-client
PROBE=$TOOLS/scrub-probe
require "scrub oracle suite" "$BROKER" "$ECHO" "$CLIENT" "$PROBE" openssl

D=$TMP

SECRET='s3cr3t-T0KEN-abcdef-9876'
SPACED='open sesame/42+x'
B64=$(printf %s "$SECRET" | base64 -w0)
R='\[bulkhead:redacted\]'

if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
"$ECHO" --cert "$D/up.pem" --key "$D/up.key" --log "$D/up.log" > "$D/up.port" 2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")

LOOP='"allow_addresses": ["127.0.0.1", "::1"]'
cat > "$D/rules.json" << RULES
{
  "secrets": [
    { "name": "TOK", "inject": { "header": "X-Api-Key", "value": "{}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/sec/", $LOOP } ] },
    { "name": "SPC", "inject": { "header": "X-Other", "value": "{}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/sec/", $LOOP } ] }
  ],
  "allow": [
    { "scheme": "https", "host": "localhost", "port": $PORT, "path_prefix": "/oracle/", $LOOP }
  ]
}
RULES
printf '{"TOK": "%s", "SPC": "%s"}\n' "$SECRET" "$SPACED" > "$D/secrets.json"
chmod 600 "$D/secrets.json"
SOCK=$D/broker.sock
"$BROKER" --listen "$SOCK" --rules "$D/rules.json" --secrets-file "$D/secrets.json" \
	--ca-file "$D/ca.pem" 2> "$D/broker.log" &
pids="$pids $!"
wait_socket "$SOCK" 5
if [ ! -S "$SOCK" ]; then
	not_ok "broker starts" "$(cat "$D/broker.log")"
	plan_done
	exit 1
fi
ok "broker starts with two secrets and an allow-listed echo"

# --- the prefix attack ------------------------------------------------------------------------

# The upstream answers {"pad":"...3000 bytes...","echo":"GUESS then pauses 400 ms, then "}.
# What arrives before the pause, and how it is cut into chunks, is what the old scrubber gave
# away: it held back a tail that could begin a secret.
URL="http://localhost:$PORT/oracle/reflect?pad=3000&pause=400"
wrong_of() { # a same-length guess that differs in its last character
	printf %s "$1" | sed 's/.$/#/'
}
set --
for n in 4 12 23; do
	p=$(printf %s "$SECRET" | cut -c1-"$n")
	set -- "$@" "$p" "$(wrong_of "$p")" "$(printf %s "qZ9x-hello-world-guess-xx" | cut -c1-"$n")"
done
for n in 6 20 31; do
	p=$(printf %s "$B64" | cut -c1-"$n")
	set -- "$@" "$p" "$(wrong_of "$p")"
done
"$PROBE" observe "$SOCK" "$URL" "$@" > "$D/observe.out" 2> "$D/observe.err"
if [ "$(wc -l < "$D/observe.out")" -ne $# ]; then
	not_ok "the probe observed every guess" "$(cat "$D/observe.err")"
else
	i=1
	bad=""
	for g in "$@"; do
		# Everything but the times (reported below), for a guess of this length.
		line=$(sed -n "${i}p" "$D/observe.out" | sed 's/ ttfb_us=.*//')
		echo "$line" | grep -q '^status=200 ' || bad="$bad
$g: $line"
		printf '%s %s\n' "${#g}" "$line" >> "$D/by-length"
		i=$((i + 1))
	done
	if [ -n "$bad" ]; then
		not_ok "every guess answered 200" "$bad"
	fi
	# One observation per guess length: true prefixes and wrong guesses are indistinguishable.
	distinct=$(sort -u "$D/by-length" | cut -d' ' -f1 | uniq -d)
	if [ -z "$distinct" ]; then
		ok "prefixes of the secret and of its base64 look exactly like wrong guesses (chunks, bytes before the pause, total)"
	else
		not_ok "a prefix is distinguishable from a wrong guess of the same length" \
			"$(sort "$D/by-length")"
	fi
	early=$(sed -n 1p "$D/observe.out" | sed 's/.*early=\([0-9]*\).*/\1/')
	total=$(sed -n 1p "$D/observe.out" | sed 's/.*total=\([0-9]*\).*/\1/')
	if [ "$early" -gt 0 ] && [ "$early" -lt "$total" ]; then
		ok "bytes arrive before the upstream's pause ($early of $total), so the check above saw the lag at work"
	else
		not_ok "bytes before the pause" "$(sed -n 1p "$D/observe.out")"
	fi
	# Times are reported, never gated: prefix vs wrong guess, median of the three lengths.
	awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^total_us=/) { sub("total_us=", "", $i); print $i } }' \
		"$D/observe.out" > "$D/times"
	echo "# times to the last byte (us), guess by guess: $(tr '\n' ' ' < "$D/times")"
fi

# The attack itself: every character at each position, keep one whose answer stands out;
# once from nothing, once from a prefix a guest may know (tokens often have a fixed format).
ALPHA='ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_+/'
attack() { # NAME START
	"$PROBE" attack "$SOCK" "http://localhost:$PORT/oracle/reflect?pad=3000" 8 "$ALPHA" "$2" \
		> "$D/$1.out" 2> "$D/$1.err"
	if grep -qx "recovered: $2" "$D/$1.out" &&
		grep -qx "position ${#2}: 0 of ${#ALPHA} answers stand out" "$D/$1.out"; then
		ok "the character-by-character prefix attack ${2:+from \"$2\" }recovers nothing ($(sed -n 's/^requests: //p' "$D/$1.out") requests)"
	else
		not_ok "the prefix attack ${2:+from \"$2\" }recovers nothing" "$(cat "$D/$1.out" "$D/$1.err")"
	fi
}
attack attack ""
attack attack-known "$(printf %s "$SECRET" | cut -c1-3)"

# --- every encoding, through the real broker ---------------------------------------------------

# ask NAME TARGET [PREFIX [SECRET]]: the secret's destination echoes PREFIX + the secret (TOK
# unless named) as TARGET says.
ask() {
	: > "$D/up.log"
	printf 'GET http://localhost:%s/sec/reflect?%s HTTP/1.1\r\nX-Reflect: %sBULKHEAD_SECRET_%s\r\nAccept-Encoding: gzip, deflate, br\r\nConnection: close\r\n\r\n' \
		"$PORT" "$2" "${3:-}" "${4:-TOK}" | "$CLIENT" raw "$SOCK" > "$D/$1.out"
	cat "$D/$1.out" >> "$D/all.out"
}
status_of() { head -n 1 "$D/$1.out" | tr -d '\r'; }
sent_of() { sed -n 's/^reflect: //p' "$D/up.log" | head -n 1; }

for enc in raw b64 b64url mime pem b64json b64jsonwrap hex HEX pct pctl pctall jsonu html bsx; do
	for pre in "" A AA; do
		case $enc in raw | hex | HEX | pct | pctl | pctall | jsonu | html | bsx)
			[ -n "$pre" ] && continue ;;
		esac
		ask "enc-$enc-$pre" "enc=$enc" "$pre"
		sent=$(sent_of)
		if [ "$(status_of "enc-$enc-$pre")" = "HTTP/1.1 200 OK" ] && [ -n "$sent" ] &&
			grep -q "$R" "$D/enc-$enc-$pre.out" &&
			! grep -qF -- "$sent" "$D/enc-$enc-$pre.out"; then
			ok "echo as $enc${pre:+ after $pre}: scrubbed in head and body"
		else
			not_ok "echo as $enc${pre:+ after $pre} scrubbed" "sent: $sent" \
				"$(cat "$D/enc-$enc-$pre.out")"
		fi
	done
done
# The second secret has characters encoders escape ('/', '+', a space).
for enc in form pct pctl b64json jsonu; do
	ask "spc-$enc" "enc=$enc" "" SPC
	sent=$(sent_of)
	if [ -n "$sent" ] && grep -q "$R" "$D/spc-$enc.out" && ! grep -qF -- "$sent" "$D/spc-$enc.out"
	then
		ok "a secret with '/', '+' and a space, echoed as $enc: scrubbed"
	else
		not_ok "secret with reserved characters as $enc scrubbed" "sent: $sent" \
			"$(cat "$D/spc-$enc.out")"
	fi
done
if grep -qx 'Accept-Encoding: identity' "$D/up.log" && ! grep -qi 'accept-encoding: .*gzip' "$D/up.log"
then
	ok "the guest's Accept-Encoding is replaced by identity toward the upstream"
else
	not_ok "Accept-Encoding: identity upstream" "$(cat "$D/up.log")"
fi

# Compressed answers although identity was asked: decoded, scrubbed, relayed plain.
for ce in gzip deflate; do
	for enc in raw b64; do
		ask "ce-$ce-$enc" "enc=$enc&ce=$ce"
		if [ "$(status_of "ce-$ce-$enc")" = "HTTP/1.1 200 OK" ] &&
			grep -q "\"echo\":\"[^\"]*$R" "$D/ce-$ce-$enc.out" &&
			! grep -qi '^content-encoding' "$D/ce-$ce-$enc.out" &&
			! grep -qF -- "$(sent_of)" "$D/ce-$ce-$enc.out"; then
			ok "$ce-compressed $enc echo: decoded, scrubbed, relayed without Content-Encoding"
		else
			not_ok "$ce-compressed $enc echo" "$(head -c 600 "$D/ce-$ce-$enc.out")"
		fi
	done
done
# Bodies the broker cannot read: a clear 502 before any byte of them.
refused() { # NAME TARGET WHY
	ask "$1" "$2"
	if [ "$(status_of "$1")" = "HTTP/1.1 502 Bad Gateway" ] && grep -q "$3" "$D/$1.out" &&
		! grep -q '"echo"' "$D/$1.out"; then
		ok "$1: 502 ($(tail -n 1 "$D/$1.out" | cut -c1-100))"
	else
		not_ok "$1 refused with 502" "$(head -c 600 "$D/$1.out")"
	fi
}
refused brotli "enc=raw&ce=br" 'Content-Encoding br'
refused stacked "enc=raw&ce=stacked" 'stacked codings'
refused transfer-coding "enc=raw&te=gzip,chunked" 'transfer coding other than chunked'
refused bomb "ce=bomb&mib=64" 'larger than 8 MiB decoded'

# Every byte the guest received: no secret in the forms a test can compute here.
for form in "$SECRET" "$B64" "$(printf %s "$SECRET" | od -An -tx1 | tr -d ' \n')" "$SPACED"; do
	if grep -qiF -- "$form" "$D/all.out" "$D/broker.log"; then
		not_ok "no secret form in what the guest received or the log" "found: $form"
	else
		ok "no \"$(printf %s "$form" | cut -c1-6)...\" in the $(wc -c < "$D/all.out") bytes received or in the log"
	fi
done
if grep -q 'runtime error\|AddressSanitizer' "$D/broker.log"; then
	not_ok "no sanitizer report from the broker" "$(grep -A5 'runtime error\|AddressSanitizer' "$D/broker.log" | head -n 20)"
else
	ok "no sanitizer report from the broker"
fi
plan_done
