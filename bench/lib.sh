# SPDX-License-Identifier: Apache-2.0
# bench/lib.sh: what the benchmark scripts share. Source it: . "$(dirname "$0")/lib.sh"
# now_us: the time in microseconds (date's %6N truncates, as dividing %N by 1000 would;
# one process fewer per call, which matters next to a reference of a millisecond or two).
now_us() { date +%s%6N; }
. "$(dirname "$0")/../tests/e2e/debian_python.sh"
# median [FILE]: the median of the numbers in FILE (or stdin), one per line; the mean of the
# middle two when their count is even. %.15g, not awk's default %.6g: microsecond and
# nanosecond values keep every digit. Nothing and status 1 when there are no numbers.
median() {
	sort -n "$@" | awk 'NF { a[++n] = $1 }
		END { if (!n) exit 1; printf "%.15g\n", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'
}
# percentile P [FILE]: the P-th percentile of the numbers in FILE (or stdin) by nearest rank:
# the value at rank ceil(N * P / 100) of the N sorted (at least 1). Status 1 when there are none.
percentile() {
	sort -n ${2+"$2"} | awk -v p="$1" 'NF { a[++n] = $1 }
		END { if (!n) exit 1; i = int(n * p / 100); if (i < n * p / 100) i++; if (i < 1) i = 1
		      printf "%.15g\n", a[i] }'
}

# The broker benches' common ground. bench_tmp: $tmp, a directory removed at exit with every
# process in $pids stopped. bench_upstream ECHO: a throwaway CA and a leaf for localhost and
# 127.0.0.1 in $tmp (ca.pem, leaf.pem, leaf.key: bench_pki alone makes them), and https-echo
# serving with them on $PORT.
# Both report through the script's own fail().
bench_tmp() {
	tmp=$(mktemp -d)
	pids=""
	trap bench_cleanup EXIT
	trap 'exit 130' INT
	trap 'exit 143' TERM
}
bench_cleanup() {
	for p in $pids; do kill "$p" 2> /dev/null || :; done
	for p in $pids; do wait "$p" 2> /dev/null || :; done
	rm -rf "$tmp"
}
# wait_for TEST FILE: up to 5 s for the file to appear.
wait_for() {
	i=0
	while ! test "$1" "$2" && [ $i -lt 100 ]; do
		sleep 0.05
		i=$((i + 1))
	done
	test "$1" "$2"
}
bench_pki() {
	{
		openssl req -x509 -newkey rsa:2048 -nodes -keyout "$tmp/ca.key" -out "$tmp/ca.pem" \
			-days 1 -subj /CN=bulkhead-bench-ca &&
			openssl req -newkey rsa:2048 -nodes -keyout "$tmp/leaf.key" \
				-out "$tmp/leaf.csr" -subj /CN=localhost &&
			printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$tmp/leaf.ext" &&
			openssl x509 -req -in "$tmp/leaf.csr" -CA "$tmp/ca.pem" -CAkey "$tmp/ca.key" \
				-CAcreateserial -out "$tmp/leaf.pem" -days 1 -extfile "$tmp/leaf.ext"
	} > /dev/null 2> "$tmp/pki.err" ||
		fail "openssl could not make the test PKI: $(tail -n 1 "$tmp/pki.err")"
}
bench_upstream() {
	bench_pki
	"$1" --cert "$tmp/leaf.pem" --key "$tmp/leaf.key" > "$tmp/echo.port" 2> "$tmp/echo.err" &
	pids="$pids $!"
	wait_for -s "$tmp/echo.port" || fail "https-echo did not start: $(cat "$tmp/echo.err")"
	PORT=$(cat "$tmp/echo.port")
}
# A broker for the upstream on localhost:PORT with two paths, as the streaming benches compare
# them: /open/ allowed with no credential, /cred/ with a token injected (X-Api-Key). Its
# socket: $tmp/b.sock, its pid: $broker_pid.
bench_broker_two_paths() {
	cat > "$tmp/rules.json" << RULES
{ "secrets": [ { "name": "TOK", "inject": { "header": "X-Api-Key", "value": "{}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $1,
                        "path_prefix": "/cred/", "allow_addresses": ["127.0.0.1"] } ] } ],
  "allow": [ { "scheme": "https", "host": "localhost", "port": $1, "path_prefix": "/open/",
               "allow_addresses": ["127.0.0.1"] } ] }
RULES
	printf '{"TOK": "sk-bench-0123456789abcdefghijklmnop"}\n' > "$tmp/secrets.json"
	chmod 600 "$tmp/secrets.json"
	"$BROKER" --listen "$tmp/b.sock" --rules "$tmp/rules.json" \
		--secrets-file "$tmp/secrets.json" --ca-file "$tmp/ca.pem" --quiet 2> "$tmp/broker.err" &
	broker_pid=$!
	pids="$pids $!"
	wait_for -S "$tmp/b.sock" || fail "the broker did not start: $(cat "$tmp/broker.err")"
}
# P50 and P99 of the files direct, plain and cred under $tmp, one row each (values in us,
# shown in ms with DIGITS decimals); sets p50_direct, p50_plain, p50_cred.
bench_three_rows() {
	printf '  %-34s %9s %9s\n' "" "p50 ms" "p99 ms"
	for f in direct plain cred; do
		case $f in
		direct) what="direct (TLS to the upstream)" ;;
		plain) what="broker, no credential" ;;
		cred) what="broker, token injected + scrubbed" ;;
		esac
		eval "p50_$f=$(median "$tmp/$f")"
		eval "_p99=$(percentile 99 "$tmp/$f")"
		eval "_p50=\$p50_$f"
		awk -v w="$what" -v a="$_p50" -v b="$_p99" -v d="$1" \
			'BEGIN { printf "  %-34s %9.*f %9.*f\n", w, d, a / 1000, d, b / 1000 }'
	done
}
