#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_resume.sh: the broker resumes upstream TLS sessions (broker/tls_resume.c)
# and trusts nothing by them. A shared broker with two sessions, in front of https-echo, whose
# /tls answers whether the connection's handshake was resumed; every request on a connection
# of its own.
#  - A session's second and third connections to an upstream resume; its first is full.
#  - Another session's first connection is full: no ticket crosses sessions.
#  - Another identity (the address instead of the name) is full.
#  - The upstream replaced on the same port by one whose certificate the CA did not sign: the
#    request fails verification (502), kept sessions or not; the trusted one back: full, then
#    resumed.
#  - An upstream that changes to such a certificate but keeps its ticket keys: the sessions of
#    its last verified handshake resume, none that a resumed one brought; then 502.
#  - 16 connections at once, then 16 more: all served, at least the 4 sessions kept resumed.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
CLIENT=$BUILD/tests/proxy-client
BROKER=$BIN/bulkhead-broker
require "broker TLS resumption" "$ECHO" "$CLIENT" "$BROKER" openssl
D=$TMP
if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
# upstream CERT KEY [PORT [OPTION VALUE]]: https-echo, its pid in $echo_pid and its port in
# $PORT.
upstream() {
	rm -f "$D/port"
	"$ECHO" --cert "$1" --key "$2" ${3:+--port "$3"} ${4:+"$4" "$5"} > "$D/port" 2> "$D/echo.err" &
	echo_pid=$!
	pids="$pids $echo_pid"
	i=0; while [ ! -s "$D/port" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
	PORT=$(cat "$D/port")
}
upstream "$D/up.pem" "$D/up.key"
[ -n "$PORT" ] || { not_ok "https-echo started" "$(cat "$D/echo.err")"; plan_done; exit 1; }
printf '{"TOK": "resume-test-secret-8841"}\n' > "$D/secrets.json"
chmod 600 "$D/secrets.json"
cat > "$D/scope.json" << EOF2
{ "secrets": [ { "name": "TOK", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] },
                      { "scheme": "https", "host": "127.0.0.1", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
EOF2
"$BROKER" --control "$D/ctl.sock" --secrets-file "$D/secrets.json" --ca-file "$D/ca.pem" \
	2> "$D/broker.log" &
bpid=$!
pids="$pids $bpid"
wait_socket "$D/ctl.sock" 5
# register NAME: session NAME on the broker.
register() { broker_register "$D/ctl.sock" "$1" "$D/scope.json" "$D/$1.sock" "$D"; }
register a
register b
# tls SESSION [HOST]: one request on a connection of its own; prints the answer's status line
# and, for a 200, the upstream's word on the handshake (full, resumed).
tls() {
	_h=${2:-localhost}
	printf 'GET http://%s:%s/tls HTTP/1.1\r\nHost: %s:%s\r\nConnection: close\r\n\r\n' \
		"$_h" "$PORT" "$_h" "$PORT" | "$CLIENT" raw "$D/$1.sock" 2>&1 |
		awk '{ sub(/\r$/, "") } NR == 1 { s = $0 } /^(full|resumed|plain)$/ || /^bulkhead: / { w = $0 }
		     END { print s " | " w }'
}
FULL="HTTP/1.1 200 OK | full"
RESUMED="HTTP/1.1 200 OK | resumed"

r1=$(tls a) r2=$(tls a) r3=$(tls a)
if [ "$r1" = "$FULL" ] && [ "$r2" = "$RESUMED" ] && [ "$r3" = "$RESUMED" ]; then
	ok "a session's first connection upstream is a full handshake, its next ones resume"
else
	not_ok "full, then resumed" "1: $r1" "2: $r2" "3: $r3" "$(tail -n 3 "$D/broker.log")"
fi
b1=$(tls b) b2=$(tls b)
if [ "$b1" = "$FULL" ] && [ "$b2" = "$RESUMED" ]; then
	ok "another session's first connection is full (no ticket crosses sessions), then resumes"
else
	not_ok "session b: full, then resumed" "1: $b1" "2: $b2"
fi
i1=$(tls a 127.0.0.1) i2=$(tls a 127.0.0.1)
if [ "$i1" = "$FULL" ] && [ "$i2" = "$RESUMED" ]; then
	ok "another identity of the same upstream (its address) is full, then resumes"
else
	not_ok "127.0.0.1: full, then resumed" "1: $i1" "2: $i2"
fi

# The upstream replaced on its port by one the CA did not sign: nothing kept vouches for it.
openssl req -x509 -newkey rsa:2048 -nodes -keyout "$D/rogue.key" -out "$D/rogue.pem" \
	-days 1 -subj /CN=localhost -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
	2> /dev/null
kill "$echo_pid"
wait "$echo_pid" 2> /dev/null
old=$PORT
upstream "$D/rogue.pem" "$D/rogue.key" "$old"
x1=$(tls a) x2=$(tls b)
case "$x1/$x2" in
"HTTP/1.1 502 Bad Gateway | "*"certificate verification failed"*"/HTTP/1.1 502 Bad Gateway | "*"certificate verification failed"*)
	ok "an upstream the CA did not sign, on the same port: 502, certificate verification failed, in both sessions" ;;
*) not_ok "the rogue upstream is refused" "port $old -> $PORT" "a: $x1" "b: $x2" ;;
esac
kill "$echo_pid"
wait "$echo_pid" 2> /dev/null
upstream "$D/up.pem" "$D/up.key" "$old"
t1=$(tls a) t2=$(tls a)
if [ "$t1" = "$FULL" ] && [ "$t2" = "$RESUMED" ]; then
	ok "the trusted upstream back (new ticket keys): full, then resumed again"
else
	not_ok "after the restart: full, then resumed" "1: $t1" "2: $t2"
fi

# An upstream that keeps its ticket keys but changes to a certificate the CA did not sign:
# only the sessions of the last verified handshake are resumed, never those a resumed
# handshake brought (a chain of them would never show a certificate again); then 502.
register c
kill "$echo_pid"
wait "$echo_pid" 2> /dev/null
upstream "$D/up.pem" "$D/up.key" "$old" --swap "1:$D/rogue.pem:$D/rogue.key"
seq=""
for n in 1 2 3 4 5 6 7 8; do
	r=$(tls c)
	case $r in
	"$FULL") seq="$seq full" ;;
	"$RESUMED") seq="$seq resumed" ;;
	"HTTP/1.1 502 Bad Gateway | "*"certificate verification failed"*) seq="$seq 502" ;;
	*) seq="$seq other($r)" ;;
	esac
done
# At most the 4 sessions kept per identity resume, then every handshake is full and fails.
n_res=$(printf '%s\n' $seq | grep -c '^resumed$')
case $seq in
" full resumed"*" 502 502 502")
	if [ "$n_res" -le 4 ]; then
		ok "certificate changed, ticket keys kept: the verified handshake's sessions only, then 502:$seq"
	else
		not_ok "at most 4 resumed (the sessions kept per identity)" "$seq"
	fi ;;
*) not_ok "no resumption chain past a certificate change" "$seq" ;;
esac
kill "$echo_pid"
wait "$echo_pid" 2> /dev/null
upstream "$D/up.pem" "$D/up.key" "$old"

# Connections opened together: each takes a kept session of its own, or makes one.
round() {
	n=0
	while [ $n -lt 16 ]; do
		tls a > "$D/par.$n" &
		n=$((n + 1))
	done
	wait # run as $(round): its own children only
	cat "$D"/par.*
	rm -f "$D"/par.*
}
p1=$(round)
p2=$(round)
served=$(printf '%s\n%s\n' "$p1" "$p2" | grep -c "^HTTP/1.1 200 OK | ")
resumed=$(printf '%s\n' "$p2" | grep -c "^$RESUMED$")
# Round one's full handshakes leave 4 sessions kept (TLS_RESUME_PER_KEY); round two takes
# them, and whatever its own full handshakes bring meanwhile.
if [ "$served" = 32 ] && [ "$resumed" -ge 4 ]; then
	ok "32 connections in two rounds of 16 at once: all served, $resumed of the second round resumed"
else
	not_ok "parallel connections" "served $served of 32, resumed $resumed of 16" "$p1" "$p2"
fi
kill -0 "$bpid" 2> /dev/null && ok "the broker is still up" || not_ok "the broker is up" "$(tail -n 5 "$D/broker.log")"
plan_done
