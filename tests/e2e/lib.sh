# SPDX-License-Identifier: Apache-2.0
# tests/e2e/lib.sh: TAP helpers for end-to-end suites (sourced, POSIX sh).
# Provides ok/not_ok/skip/plan_done, check_eq, require, wait_port, $pids (killed at the end),
# and $BIN, $LIBDIR, $BULKHEAD, $TMP.
BUILD=${BUILD:-build}
BIN=$(cd "$BUILD/bin" && pwd)
LIBDIR=$(cd "$BUILD/lib/bulkhead" && pwd)
BULKHEAD=$BIN/bulkhead
TMP=$(mktemp -d "${TMPDIR:-/tmp}/bulkhead-e2e.XXXXXX")
# Background helpers a suite starts (upstreams, brokers): add each one's pid to $pids; all are
# killed when the suite ends, before $TMP goes.
pids=""
trap 'for p in $pids; do kill "$p" 2> /dev/null; done; rm -rf "$TMP"' EXIT
_n=0
. "$(dirname "$0")/../e2e/debian_python.sh"

ok() { _n=$((_n + 1)); echo "ok $_n - $1"; }
# not_ok NAME [DETAIL...]: details are printed as TAP comments.
not_ok() {
	_n=$((_n + 1)); echo "not ok $_n - $1"; shift
	for d in "$@"; do printf '%s\n' "$d" | sed 's/^/# /'; done
}
skip() { _n=$((_n + 1)); echo "ok $_n - $1 # SKIP $2"; }
plan_done() { echo "1..$_n"; }
# no_sanitizer_report PROGRAM FILE...: a check that no sanitizer (ASan, UBSan, TSan) reported
# into PROGRAM's logs; a skip when PROGRAM (a path) is not a sanitizer build.
no_sanitizer_report() {
	_prog=$1; shift
	if ! ldd "$_prog" 2> /dev/null | grep -q 'lib[at]san\|libubsan'; then
		skip "no sanitizer report from $(basename "$_prog")" "not a sanitizer build"
	elif grep -q 'ERROR: [A-Za-z]*Sanitizer\|WARNING: ThreadSanitizer\|runtime error' "$@" 2> /dev/null; then
		not_ok "no sanitizer report from $(basename "$_prog")" "$(for _f in "$@"; do log_tail "$_f"; done | head -n 60)"
	else
		ok "no sanitizer report from $(basename "$_prog")"
	fi
}
# log_tail FILE: what a failure shows of a program's log: a sanitizer's report from its first
# line and without its shadow-byte legend (the stack is what matters), else the last 20 lines.
log_tail() {
	if grep -q 'ERROR: [A-Za-z]*Sanitizer\|WARNING: ThreadSanitizer\|runtime error' "$1" 2> /dev/null; then
		sed -n '/ERROR: [A-Za-z]*Sanitizer\|WARNING: ThreadSanitizer\|runtime error/,$p' "$1" | grep -v '^ *Shadow\|^  [A-Z][a-z].*: *[0-9a-f ]*$' | head -n 60
	else
		tail -n 20 "$1" 2> /dev/null
	fi
}
# tap_replay FILE: the TAP a part of the suite wrote to FILE (run in a subshell, so that it
# could be run again), counted here: each check renumbered, every other line kept.
tap_replay() {
	while IFS= read -r _l; do
		case $_l in
		"not ok "*) _n=$((_n + 1)); printf 'not ok %s - %s\n' "$_n" "${_l#not ok [0-9]* - }" ;;
		"ok "*) _n=$((_n + 1)); printf 'ok %s - %s\n' "$_n" "${_l#ok [0-9]* - }" ;;
		*) printf '%s\n' "$_l" ;;
		esac
	done < "$1"
}

# check_eq NAME EXPECTED ACTUAL
check_eq() {
	if [ "$2" = "$3" ]; then ok "$1"; else not_ok "$1" "expected: $2" "actual:   $3"; fi
}

# run_capture ARGS...: runs bulkhead with ARGS; sets $rc, files $TMP/out, $TMP/err.
run_capture() {
	"$BULKHEAD" "$@" > "$TMP/out" 2> "$TMP/err" < /dev/null
	rc=$?
}

# test_pki: a throwaway test CA ($TMP/ca.pem, ca.key) and a certificate for localhost and
# 127.0.0.1 signed by it ($TMP/up.pem, up.key), made with openssl. 0, or non-zero if not.
test_pki() {
	openssl req -x509 -newkey rsa:2048 -nodes -keyout "$TMP/ca.key" -out "$TMP/ca.pem" \
		-days 1 -subj /CN=bulkhead-e2e-test-ca 2> /dev/null &&
		openssl req -newkey rsa:2048 -nodes -keyout "$TMP/up.key" -out "$TMP/up.csr" \
			-subj /CN=localhost 2> /dev/null &&
		printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > "$TMP/up.ext" &&
		openssl x509 -req -in "$TMP/up.csr" -CA "$TMP/ca.pem" -CAkey "$TMP/ca.key" \
			-CAcreateserial -out "$TMP/up.pem" -days 1 -extfile "$TMP/up.ext" 2> /dev/null
}

# vm_pid: the VM process (QEMU or bulkhead-vmm) of the first session under $BULKHEAD_RUNDIR, a
# child of the launcher named in its run directory's pid file (its command line names no run
# directory: jailed, it gets its sockets as descriptors). Waits up to 10 s; empty if none.
vm_pid() {
	_i=0
	while [ $_i -lt 100 ]; do
		for _f in "$BULKHEAD_RUNDIR"/*/pid; do
			[ -f "$_f" ] || continue
			for _c in $(pgrep -P "$(cut -d" " -f1 "$_f")"); do
				case $(cat "/proc/$_c/comm" 2> /dev/null) in
				qemu-system-x86 | bulkhead-vmm) echo "$_c"; return ;;
				esac
			done
		done
		sleep 0.1; _i=$((_i + 1))
	done
}

# triple_line NAME: bulkhead-vmm's stderr ($TMP/err) after tests/guests/triple.S is one line
# naming where the guest failed (its load from a non-canonical address, bytes 48 8b 00), or,
# where the host's KVM resets the vCPU before the shutdown reaches user space (AMD SVM), saying
# that the site is unknown: never the reset vector (RIP 0xfff0, CS 0xf000) as if the guest had
# stopped there.
triple_line() {
	if [ "$(wc -l < "$TMP/err")" -eq 1 ] &&
		{ grep -q 'shut down (triple fault) at RIP 0x[0-9a-f]* (CS 0x8, CPL 0, vCPU 0), bytes 48 8b 00' "$TMP/err" ||
			grep -q 'shut down (triple fault) on vCPU 0; fault site unknown: this host.s KVM (AMD SVM) resets' "$TMP/err"; }; then
		ok "$1: one stderr line with the fault site, or saying it is unknown"
	else
		not_ok "$1: one stderr line with the fault site, or saying it is unknown" "stderr: $(cat "$TMP/err")"
	fi
}

# require SUITE NAME...: the whole suite skips, saying what is missing, unless each NAME is an
# executable file (a path: `make test-programs` builds them), a command on PATH, or py:MODULE, a
# module a python3 imports (Debian's python3-MODULE; $PY is that python3).
require() {
	_suite=$1
	shift
	for _r in "$@"; do
		case $_r in
		*/*) [ -x "$_r" ] && continue; _why="$_r not built (make test-programs builds it)" ;;
		py:*) debian_python "${_r#py:}" && continue
			_why="python3-${_r#py:} is not installed (make deps)" ;;
		*) command -v "$_r" > /dev/null && continue; _why="the $_r command is missing (apt-get install $_r)" ;;
		esac
		skip "$_suite" "$_why"
		plan_done
		exit 0
	done
}

# wait_socket PATH [SECONDS] [PID]: waits until PATH is a socket (a helper listens there), at
# most SECONDS (5), giving up at once when PID is given and has ended. Status 0 when it is.
# The one socket wait of the suites (tests/e2e/test_tree_shape.sh keeps it so).
wait_socket() {
	_ws_n=$(awk -v s="${2:-5}" 'BEGIN { print int(s * 20) }')
	_ws_i=0
	while [ ! -S "$1" ] && [ $_ws_i -lt "$_ws_n" ]; do
		[ -z "${3:-}" ] || kill -0 "$3" 2> /dev/null || break
		sleep 0.05
		_ws_i=$((_ws_i + 1))
	done
	[ -S "$1" ]
}

# wait_port FILE: what a helper wrote to FILE once it listens (its port), waiting 5 s at most.
wait_port() {
	_i=0
	while [ ! -s "$1" ] && [ $_i -lt 100 ]; do
		sleep 0.05
		_i=$((_i + 1))
	done
	cat "$1"
}

# broker_register CTL NAME SCOPE SOCK DIR: session NAME registered with the shared broker at
# CTL (proxy-client register), its guests' socket SOCK, held by a writer on the FIFO
# DIR/hold.NAME, whose pid is left in $holder (killing it ends the session). What the client
# said is in DIR/NAME.reg, waited for up to 5 s.
broker_register() {
	mkfifo "$5/hold.$2"
	"$BUILD/tests/proxy-client" register "$1" "$2" "$3" "$4" < "$5/hold.$2" > "$5/$2.reg" 2>&1 &
	pids="$pids $!"
	sleep 600 > "$5/hold.$2" &
	holder=$!
	pids="$pids $holder"
	i=0; while [ ! -s "$5/$2.reg" ] && [ $i -lt 100 ]; do sleep 0.05; i=$((i + 1)); done
}

# relayed_broker DIR [BROKER-OPTION...]: bulkhead-broker on DIR/b.sock with DIR's rules.json,
# secrets.json, ca.pem (upstream CA) and audit log, its pid in $bpid; a TCP relay to it for
# clients that take only a proxy URL (tests/tools/tcp_relay.py), its port in $RELAY; and its
# session CA in DIR/session-ca.pem, as bulkhead-init fetches it. Status 1 when one is missing.
relayed_broker() {
	_d=$1
	shift
	"$BIN/bulkhead-broker" --listen "$_d/b.sock" --rules "$_d/rules.json" \
		--secrets-file "$_d/secrets.json" --ca-file "$_d/ca.pem" --audit "$_d/audit" "$@" \
		2> "$_d/broker.log" &
	bpid=$!
	pids="$pids $bpid"
	wait_socket "$_d/b.sock"
	relay_to "$_d/b.sock" "$_d"
}

# relay_to SOCK DIR: a TCP relay to the broker session socket SOCK, its port in $RELAY, and
# that session's CA in DIR/session-ca.pem. Status 1 when either is missing.
relay_to() {
	python3 "$(dirname "$0")/../tools/tcp_relay.py" "$1" > "$2/relay.port" 2> "$2/relay.err" &
	pids="$pids $!"
	RELAY=$(wait_port "$2/relay.port")
	printf 'GET /.well-known/bulkhead/ca.pem HTTP/1.1\r\nConnection: close\r\n\r\n' |
		"$BUILD/tests/proxy-client" raw "$1" |
		sed -n '/^-----BEGIN CERTIFICATE-----/,/^-----END CERTIFICATE-----/p' > "$2/session-ca.pem"
	[ -n "$RELAY" ] && [ -s "$2/session-ca.pem" ]
}

# vault_broker DIR VAULT: a shared bulkhead-broker (control socket DIR/ctl.sock) with the vault
# VAULT, DIR/ca.pem as upstream CA and audit records in DIR/audit, its log DIR/broker.log and
# pid $bpid; session "a" registered with DIR/scope.json on DIR/a.sock (broker_register); a
# relay and the session CA as relay_to gives them.
vault_broker() {
	mkdir -m 700 "$1/audit"
	"$BIN/bulkhead-broker" --control "$1/ctl.sock" --vault "$2" --ca-file "$1/ca.pem" \
		--audit-dir "$1/audit" 2> "$1/broker.log" &
	bpid=$!
	pids="$pids $bpid"
	wait_socket "$1/ctl.sock" 5
	broker_register "$1/ctl.sock" a "$1/scope.json" "$1/a.sock" "$1"
	relay_to "$1/a.sock" "$1"
}
