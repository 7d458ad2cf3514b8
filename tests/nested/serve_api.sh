# SPDX-License-Identifier: Apache-2.0
# Sourced by L1 suites that talk to `bulkhead serve` (L1 has no curl: HTTP/1.1 by hand over
# fd-connect). serve_up POOL [ARGS...] starts the daemon on $TMP/serve.sock ($SPID) and waits
# until POOL guests are ready; api METHOD PATH [BODY] prints its answer, headers and body.
SOCK=$TMP/serve.sock
api() {
	"$BUILD/tests/fd-connect" 3="$SOCK" -- sh -c 'printf "%s %s HTTP/1.1\r\nHost: serve\r\nConnection: close\r\nContent-Length: %s\r\n\r\n%s" "$1" "$2" "${#3}" "$3" >&3; cat <&3' \
		api "$1" "$2" "${3:-}" 2> /dev/null
}
serve_up() {
	want=$1
	shift
	"$BULKHEAD" serve --socket "$SOCK" --state "$TMP/state" --pool "$want" "$@" 2> "$TMP/serve.log" &
	SPID=$!
	wait_socket "$SOCK" 10
	i=0
	while [ $i -lt 600 ] && ! api GET /v1/pool | grep -q "\"ready\": *$want"; do
		sleep 0.2; i=$((i + 1))
	done
}
