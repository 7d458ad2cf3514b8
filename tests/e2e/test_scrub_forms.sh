#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_scrub_forms.sh: the response scrubber's edges through the real broker, host
# only, against a TLS echo upstream (tests/tools/https_echo.c, echo_reflect.c): the secret's
# destination echoes it in the escape forms of many languages (backslash-escaped punctuation,
# octal, \u{..}, %uHHHH, CSS, padded and semicolon-less HTML numeric references, HTML5 named
# references, Perl's \x{..} \o{..} \N{U+..}, shells' \0NNN, Java's \uuu, Python's \N{NAME}),
# each first decoded to the secret by that language's own decoder: all scrubbed; a body ended by the connection's close arrives whole (the held
# tail flushed, scrubbed); a partial answer (206, Content-Range) from a destination that
# receives credentials is refused with 502 and audited.
. "$(dirname "$0")/lib.sh"

BROKER=$BIN/bulkhead-broker
TOOLS=$(cd "$BUILD/tests" 2> /dev/null && pwd)
ECHO=$TOOLS/https-echo
CLIENT=$TOOLS/proxy-client
require "scrub forms suite" "$BROKER" "$ECHO" "$CLIENT" openssl python3

D=$TMP

# Punctuation in every class an encoder escapes; letters and digits stay raw in most forms.
SECRET='tok_Xy7.Qz/9+Lm=Wk-:a~b@c'
R='\[bulkhead:redacted\]'

if ! test_pki; then
	not_ok "test PKI made with openssl"
	plan_done
	exit 1
fi
"$ECHO" --cert "$D/up.pem" --key "$D/up.key" --log "$D/up.log" > "$D/up.port" 2> "$D/up.err" &
pids="$pids $!"
PORT=$(wait_port "$D/up.port")
# A second upstream that no credential goes to.
"$ECHO" --cert "$D/up.pem" --key "$D/up.key" > "$D/free.port" 2> "$D/free.err" &
pids="$pids $!"
FREE=$(wait_port "$D/free.port")

LOOP='"allow_addresses": ["127.0.0.1", "::1"]'
cat > "$D/rules.json" << RULES
{
  "secrets": [
    { "name": "TOK", "inject": { "header": "X-Api-Key", "value": "{}" },
      "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                          "path_prefix": "/sec/", $LOOP } ] }
  ],
  "allow": [
    { "scheme": "https", "host": "localhost", "port": $PORT, "path_prefix": "/open/", $LOOP },
    { "scheme": "https", "host": "localhost", "port": $FREE, $LOOP }
  ]
}
RULES
printf '{"TOK": "%s"}\n' "$SECRET" > "$D/secrets.json"
chmod 600 "$D/secrets.json"
SOCK=$D/broker.sock
"$BROKER" --listen "$SOCK" --rules "$D/rules.json" --secrets-file "$D/secrets.json" \
	--ca-file "$D/ca.pem" --audit "$D/audit.log" 2> "$D/broker.log" &
pids="$pids $!"
wait_socket "$SOCK" 5
if [ ! -S "$SOCK" ]; then
	not_ok "broker starts" "$(cat "$D/broker.log")"
	plan_done
	exit 1
fi
ok "broker starts with a secret and an echo upstream"

# ask NAME PATH QUERY [X-REFLECT]: the upstream echoes X-Reflect (the secret by default) as
# QUERY says.
ask() {
	: > "$D/up.log"
	printf 'GET http://localhost:%s/%s/reflect?%s HTTP/1.1\r\nX-Reflect: %s\r\nConnection: close\r\n\r\n' \
		"$PORT" "$2" "$3" "${4:-BULKHEAD_SECRET_TOK}" | "$CLIENT" raw "$SOCK" > "$D/$1.out"
	cat "$D/$1.out" >> "$D/all.out"
}
status_of() { head -n 1 "$D/$1.out" | tr -d '\r'; }
sent_of() { sed -n 's/^reflect: //p' "$D/up.log" | head -n 1; }
# The body the guest's HTTP client reads: de-chunked; empty unless the chunked framing ends.
body_of() {
	python3 - "$D/$1.out" << 'PY'
import sys
d = open(sys.argv[1], 'rb').read()
head, _, rest = d.partition(b'\r\n\r\n')
out = b''
while True:
    line, _, rest = rest.partition(b'\r\n')
    try:
        n = int(line, 16)
    except ValueError:
        sys.exit(0)
    if n == 0:
        sys.stdout.buffer.write(out)
        sys.exit(0)
    out += rest[:n]
    rest = rest[n + 2:]
PY
}

# --- the escape forms ---------------------------------------------------------------------------

# real_decode ENC: stdin as the language's own decoder reads it (bash's printf %b, perl, java,
# Python's unicode_escape), or Python's decoders and plain rules (scrub_decode.py); fails
# when the decoder is not installed.
real_decode() {
	case $1 in
	sh0*) command -v bash > /dev/null && bash -c 'printf %b "$(cat)"' ;;
	perl*) command -v perl > /dev/null &&
		perl -e 'local $/; my $s = <STDIN>; print eval "qq\x01$s\x01"' ;;
	javau*)
		if java -version > /dev/null 2>&1 && command -v javac > /dev/null; then
			printf 'class D { public static void main(String[] a) { System.out.print("%s"); } }\n' \
				"$(cat)" > "$D/D.java" && java "$D/D.java"
		else
			python3 "$(dirname "$0")/../tools/scrub_decode.py" "$1"
		fi ;;
	*) python3 "$(dirname "$0")/../tools/scrub_decode.py" "$1" ;;
	esac
}

# The broker's table of Python's \N{} names is what Python reads today.
if python3 "$(dirname "$0")/../tools/scrub_unames.py" > "$D/unames.h" 2> "$D/unames.err" &&
	cmp -s "$D/unames.h" "$(dirname "$0")/../../broker/scrub_unames.h"; then
	ok "broker/scrub_unames.h is what tests/tools/scrub_unames.py makes of this Python"
else
	not_ok "broker/scrub_unames.h up to date" "$(cat "$D/unames.err")" \
		"$(diff "$D/unames.h" "$(dirname "$0")/../../broker/scrub_unames.h" 2>&1 | head -n 20)"
fi

# Each decodes to the secret with the language's own decoder.
for enc in bspunct octal octalall ubrace ubraceall pctu pctuall css cssall css6 html0 htmlx0 \
	htmlnosemi html5 bigu perlx perlx0all perlo perloall perlnuall sh0 sh0all javau javauall \
	pyname pynameall pynamelcall; do
	case $enc in
	sh0*) tool=bash ;;
	perl*) tool=perl ;;
	*) tool=python3 ;;
	esac
	if ! command -v $tool > /dev/null; then
		skip "echo as $enc" "$tool is not installed, nothing here decodes the form"
		continue
	fi
	ask "enc-$enc" sec "enc=$enc"
	sent=$(sent_of)
	dec=$(printf %s "$sent" | real_decode "$enc")
	if [ "$dec" != "$SECRET" ]; then
		not_ok "the upstream's $enc form decodes to the secret" "sent: $sent" "decoded: $dec"
	elif [ "$(status_of "enc-$enc")" = "HTTP/1.1 200 OK" ] && grep -q "$R" "$D/enc-$enc.out" &&
		! grep -qF -- "$sent" "$D/enc-$enc.out"; then
		ok "echo as $enc: scrubbed in head and body" # (dash's echo would decode the sample)
	else
		not_ok "echo as $enc scrubbed" "sent: $sent" "$(cat "$D/enc-$enc.out")"
	fi
done

# --- bodies ended by the connection's close ------------------------------------------------------

# A body longer than the lag, no Content-Length, not chunked: the last bytes (where the old
# broker held its lag) must reach the guest, scrubbed, with or without TLS close_notify.
for te in eof eof-abrupt; do
	ask "$te-open" open "pad=3000&te=$te" 'plain-guess-value'
	b=$(body_of "$te-open")
	if [ "$(status_of "$te-open")" = "HTTP/1.1 200 OK" ] && [ ${#b} -eq 3037 ] &&
		[ "$(printf %s "$b" | tail -c 19)" = 'plain-guess-value"}' ]; then
		ok "$te: a connection-framed body arrives whole (${#b} bytes, its tail included)"
	else
		not_ok "$te: a connection-framed body arrives whole" "body: ${#b} bytes, ends: $(printf %s "$b" | tail -c 40)" \
			"$(tail -c 300 "$D/$te-open.out")"
	fi
	ask "$te-sec" sec "pad=3000&te=$te"
	b=$(body_of "$te-sec")
	if printf %s "$b" | tail -c 40 | grep -q "\"echo\":\"$R\"}" && ! grep -qF -- "$SECRET" "$D/$te-sec.out"
	then
		ok "$te: the held tail is flushed at the close, the secret in it scrubbed"
	else
		not_ok "$te: the held tail flushed and scrubbed" "$(tail -c 300 "$D/$te-sec.out")"
	fi
done

# --- partial answers ---------------------------------------------------------------------------

# A range lets a guest read a secret in pieces the scrubber never sees together.
for r in 206 1; do
	ask "range-$r" sec "range=$r"
	if [ "$(status_of "range-$r")" = "HTTP/1.1 502 Bad Gateway" ] &&
		grep -q 'partial response' "$D/range-$r.out" && ! grep -q '"echo"' "$D/range-$r.out"
	then
		ok "range=$r from the secret's destination: 502 ($(tail -n 1 "$D/range-$r.out" | cut -c1-90))"
	else
		not_ok "range=$r from the secret's destination refused with 502" "$(head -c 600 "$D/range-$r.out")"
	fi
done
# The same host without a credential on that path is still a host that receives one.
ask range-open open "range=206" 'abc'
if [ "$(status_of range-open)" = "HTTP/1.1 502 Bad Gateway" ]; then
	ok "a 206 from a host that receives the credential on another path: 502"
else
	not_ok "206 from the credential's host refused" "$(head -c 400 "$D/range-open.out")"
fi
# A host no credential goes to may answer with ranges (downloads resume).
printf 'GET http://localhost:%s/free/reflect?range=206 HTTP/1.1\r\nX-Reflect: abc\r\nConnection: close\r\n\r\n' \
	"$FREE" | "$CLIENT" raw "$SOCK" > "$D/range-free.out"
if [ "$(status_of range-free)" = "HTTP/1.1 206 Partial Content" ] &&
	grep -q '"echo":"abc"' "$D/range-free.out"; then
	ok "a 206 from a host that receives no credential is relayed"
else
	not_ok "206 from a host without credentials relayed" "$(head -c 400 "$D/range-free.out")"
fi
if grep '"status":502' "$D/audit.log" | grep -q '"outcome":"refused"' &&
	[ "$(grep -c '"status":502' "$D/audit.log")" -ge 3 ]; then
	ok "each refused partial answer is audited (502, refused)"
else
	not_ok "refused partial answers audited" "$(cat "$D/audit.log")"
fi

# --- nothing leaked --------------------------------------------------------------------------

if grep -qF -- "$SECRET" "$D/all.out" "$D/broker.log"; then
	not_ok "no raw secret in what the guest received or the log"
else
	ok "no raw secret in the $(wc -c < "$D/all.out") bytes received or in the log"
fi
if grep -q 'runtime error\|AddressSanitizer' "$D/broker.log"; then
	not_ok "no sanitizer report from the broker" "$(grep -A5 'runtime error\|AddressSanitizer' "$D/broker.log" | head -n 20)"
else
	ok "no sanitizer report from the broker"
fi
plan_done
