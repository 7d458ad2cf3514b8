#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: the same container image under Podman, containerd (ctr through the runc shim, the
# path of a Kubernetes RuntimeClass) and Docker, with bulkhead-oci as the runtime: each
# container a microVM. Output, exit codes, -it, exec, stop and kill behave as with runc (run
# side by side here), a scope annotation gives the container the broker's injected token, and
# nothing of any session it started is left afterwards (its sessions' run directories are its
# own; another session on the host is not its business). Engines run with private state
# (tests/tools/oci_engines.sh); one that cannot run here is skipped with its reason.
. "$(dirname "$0")/lib.sh"
. tests/tools/oci_engines.sh

OCI=$BIN/bulkhead-oci
ECHO=$BUILD/tests/https-echo
require "bulkhead-oci under container engines" "$OCI" "$ECHO" python3 openssl
if [ "$(id -u)" -ne 0 ]; then
	skip "bulkhead-oci under container engines" "needs root (the engines and the runtime)"
	plan_done; exit 0
fi
if ! PY=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip); then
	not_ok "the test image is built (bulkhead image build)"; plan_done; exit 1
fi
STORE=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/images
ROOTFS=$(readlink -f "$STORE/names/$PY")/rootfs
# The engines run this suite's bulkhead-oci: the real one with run directories of the suite's
# own, noting after each call the sessions it sees there (ids: run directories and cgroups).
RUNS=$TMP/runs
mkdir -m 700 "$RUNS" # a run base is root's alone (session/rundir.c)
: > "$TMP/ids"
cat > "$TMP/bulkhead-oci" << EOF
#!/bin/sh
# bulkhead-oci with the run directories of one test suite (tests/e2e/test_oci_engines.sh)
BULKHEAD_RUNDIR="$RUNS" "$OCI" "\$@"
rc=\$?
ls "$RUNS" >> "$TMP/ids" 2> /dev/null
exit \$rc
EOF
chmod +x "$TMP/bulkhead-oci"
OCI=$TMP/bulkhead-oci
trap 'oci_podman_stop; oci_dockerd_stop; oci_containerd_stop; for p in $pids; do kill "$p" 2> /dev/null; done; rm -rf "$TMP"' EXIT
oci_refs "$TMP/refs" 2> /dev/null || :
REF=${OCI_RUNC:-runc}
PROG='import socket, sys; print("hi from", socket.gethostname() != ""); sys.stdout.flush(); sys.exit(3)'

# leftovers: what of this suite's sessions is still on the host after their containers are gone.
leftovers() {
	find "$RUNS" -mindepth 1 -maxdepth 1 2> /dev/null
	for id in $(sort -u "$TMP/ids" | grep -E '^[0-9a-f]{16}$'); do
		find /sys/fs/cgroup -maxdepth 7 -name "bulkhead-$id" 2> /dev/null
	done
	pgrep -f "$RUNS/" 2> /dev/null
}
# same NAME REF_OUT REF_RC OUT RC: the bulkhead-oci run behaves as the reference run.
same() {
	if [ "$2" = "$4" ] && [ "$3" = "$5" ]; then ok "$1"; else
		not_ok "$1" "reference: rc=$3 $2" "bulkhead-oci: rc=$5 $4"; fi
}
# pty_run CMD...: CMD on a pseudo-terminal; types "echo $((6*7)); tty; exit 5" once a prompt
# shows; prints what the terminal showed, then "status N".
pty_run() {
	python3 - "$@" << 'PY'
import os, pty, select, sys, time
pid, fd = pty.fork()
if pid == 0:
    os.execvp(sys.argv[1], sys.argv[1:])
out, typed, start = b"", False, time.monotonic()
while time.monotonic() - start < 90:
    if not typed and (b"#" in out or time.monotonic() - start > 30):
        os.write(fd, b"echo $((6*7)); tty; exit 5\r")
        typed = True
    r, _, _ = select.select([fd], [], [], 0.2)
    if r:
        try:
            d = os.read(fd, 4096)
        except OSError:
            break
        if not d:
            break
        out += d
_, st = os.waitpid(pid, 0)
sys.stdout.write(out.decode(errors="replace").replace("\r", ""))
print("status", os.waitstatus_to_exitcode(st))
PY
}

# --- Podman -----------------------------------------------------------------------------------
if oci_podman "$ROOTFS" 2> "$TMP/podman.why"; then
	pod() { oci_podman_cmd "$@"; }
	ref_out=$(pod run --rm --runtime "$REF" "$OCI_IMAGE" python3 -c "$PROG" 2>&1); ref_rc=$?
	out=$(pod run --rm --runtime "$OCI" "$OCI_IMAGE" python3 -c "$PROG" 2>&1); rc=$?
	same "podman run --rm: output and exit code as with runc" "$ref_out" "$ref_rc" "$out" "$rc"
	mkdir "$TMP/vol" && echo from-host > "$TMP/vol/in"
	out=$(pod run --rm --runtime "$OCI" -v "$TMP/vol:/data/vol" "$OCI_IMAGE" sh -c 'cat /data/vol/in; echo from-guest > /data/vol/out' 2>&1)
	[ "$out" = from-host ] && [ "$(cat "$TMP/vol/out" 2> /dev/null)" = from-guest ] &&
		ok "podman run -v DIR:/data/vol: the volume is a share, both ways" ||
		not_ok "podman run -v: the volume is a share" "$out"
	pty_run sh -c ". tests/tools/oci_engines.sh; OCI_PODMAN_DIR='$OCI_PODMAN_DIR' OCI_PODMAN_RUN='$OCI_PODMAN_RUN'; oci_podman_cmd run --rm -it --runtime '$OCI' '$OCI_IMAGE' sh" > "$TMP/pod-it.out" 2>&1
	grep -q '^42$' "$TMP/pod-it.out" && grep -q '^/dev/pts/' "$TMP/pod-it.out" && grep -q '^status 5$' "$TMP/pod-it.out" &&
		ok "podman run -it: an interactive shell on a terminal, its exit code" ||
		not_ok "podman run -it: an interactive shell on a terminal" "$(tail -n 8 "$TMP/pod-it.out")"
	for rt in "$REF" "$OCI"; do
		pod run -d --name "t-$$" --runtime "$rt" "$OCI_IMAGE" sh -c \
			'trap "echo got-term; exit 7" TERM; echo ready; while :; do sleep 0.1; done' > /dev/null 2>&1
		i=0; while ! pod logs "t-$$" 2> /dev/null | grep -q ready && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
		ex=$(pod exec "t-$$" sh -c 'echo exec-out; exit 4' 2>&1); ex_rc=$?
		if [ "$rt" = "$OCI" ]; then
			pty_run sh -c ". tests/tools/oci_engines.sh; OCI_PODMAN_DIR='$OCI_PODMAN_DIR' OCI_PODMAN_RUN='$OCI_PODMAN_RUN'; oci_podman_cmd exec -it t-$$ sh" > "$TMP/pod-exec-it.out" 2>&1
			grep -q '^42$' "$TMP/pod-exec-it.out" && grep -q '^/dev/pts/' "$TMP/pod-exec-it.out" &&
				grep -q '^status 5$' "$TMP/pod-exec-it.out" &&
				ok "podman exec -it: a shell on a terminal in the running container" ||
				not_ok "podman exec -it: a shell on a terminal" "$(tail -n 8 "$TMP/pod-exec-it.out")"
		fi
		pod stop -t 20 "t-$$" > /dev/null 2>&1
		st=$(pod inspect "t-$$" --format '{{.State.ExitCode}}' 2> /dev/null)
		logs=$(pod logs "t-$$" 2>&1 | tr '\n' ' ')
		pod rm -f "t-$$" > /dev/null 2>&1
		pod run -d --name "k-$$" --runtime "$rt" "$OCI_IMAGE" sleep 1000 > /dev/null 2>&1
		pod kill "k-$$" > /dev/null 2>&1
		pod wait "k-$$" > /dev/null 2>&1
		kst=$(pod inspect "k-$$" --format '{{.State.ExitCode}}' 2> /dev/null)
		pod rm -f "k-$$" > /dev/null 2>&1
		eval "r_$(echo "$rt" | md5sum | cut -c1-8)='$ex $ex_rc | $st $logs| $kst'"
	done
	ref=$(eval echo "\$r_$(echo "$REF" | md5sum | cut -c1-8)")
	got=$(eval echo "\$r_$(echo "$OCI" | md5sum | cut -c1-8)")
	check_eq "podman exec, stop (TERM to the command's trap) and kill behave as with runc" "$ref" "$got"
	case $got in "exec-out 4 | 7 ready got-term | 137") ok "... and that is exec 4, stop 7 after the trap, kill 137" ;;
	*) not_ok "podman exec, stop and kill give 4, 7 and 137" "$got" ;; esac

	# The broker from an annotation: the token reaches the upstream, never the container.
	if test_pki; then
		"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" 2> /dev/null &
		pids="$pids $!"
		PORT=$(wait_port "$TMP/port")
		SECRET='tok-ENGINES-71c2e0b4-secret'
		"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
		printf '%s' "$SECRET" | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
		cat > "$TMP/scope.json" << SCOPE
{ "secrets": [ { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT, "path_prefix": "/v1/",
                        "allow_addresses": ["127.0.0.1"] } ] } ], "allow": [] }
SCOPE
		GET="import requests
try: print('answer', requests.get('https://localhost:$PORT/v1/pod').text.splitlines()[0])
except Exception as e: print('refused', type(e).__name__)"
		out=$(pod run --rm --runtime "$OCI" --annotation "io.bulkhead.scope=$TMP/scope.json" \
			--annotation "io.bulkhead.vault=$TMP/vault" --annotation "io.bulkhead.ca-file=$TMP/ca.pem" \
			"$OCI_IMAGE" python3 -c "$GET" 2>&1)
		[ "$out" = "answer GET /v1/pod" ] && [ "$(grep -c "Authorization: Bearer $SECRET" "$TMP/upstream.log")" = 1 ] &&
			ok "podman --annotation io.bulkhead.scope: the container reaches the API with the injected token" ||
			not_ok "podman --annotation io.bulkhead.scope: the API answers with the token injected" "$out"
		case $out in *"$SECRET"*) not_ok "the token never reaches the container" ;; *) ok "the token never reaches the container" ;; esac
		out=$(pod run --rm --runtime "$OCI" "$OCI_IMAGE" python3 -c "$GET" 2>&1)
		case $out in refused*) ok "without the annotation the container reaches nothing" ;;
		*) not_ok "without the annotation the container reaches nothing" "$out" ;; esac
	else
		not_ok "test PKI made with openssl"
	fi
	oci_podman_stop
else
	skip "podman with bulkhead-oci" "$(cat "$TMP/podman.why")"
fi

# --- containerd: ctr run --runc-binary (the runc shim, as a Kubernetes RuntimeClass) ----------
if [ -n "${OCI_IMAGE:-}" ] && oci_containerd_start "$TMP/ctrd" 2> "$TMP/ctrd.why"; then
	ref_out=$(oci_ctr_run "$REF" "r-$$" python3 -c "$PROG" 2>&1); ref_rc=$?
	out=$(oci_ctr_run "$OCI" "b-$$" python3 -c "$PROG" 2>&1); rc=$?
	same "ctr run through containerd's runc shim: output and exit code as with runc" "$ref_out" "$ref_rc" "$out" "$rc"
	oci_ctr_run "$OCI" "d-$$" -d -- sleep 1000 > /dev/null 2>&1
	ex=$(oci_ctr_cmd task exec --exec-id e1 "d-$$" sh -c 'echo exec-out; exit 4' 2>&1); ex_rc=$?
	check_eq "ctr task exec: output and exit code" "exec-out 4" "$ex $ex_rc"
	oci_ctr_cmd task kill -s SIGKILL "d-$$" > /dev/null 2>&1
	i=0; while oci_ctr_cmd task ls 2> /dev/null | grep -q "d-$$.*RUNNING" && [ $i -lt 100 ]; do sleep 0.1; i=$((i + 1)); done
	oci_ctr_cmd task rm "d-$$" > /dev/null 2>&1; oci_ctr_cmd container rm "d-$$" > /dev/null 2>&1
	st=$(oci_ctr_cmd task ls 2> /dev/null | grep -c "d-$$")
	check_eq "ctr task kill -s SIGKILL ends the container; it is removed" 0 "$st"
	oci_containerd_stop
elif [ -z "${OCI_IMAGE:-}" ]; then
	skip "containerd with bulkhead-oci" "no image (podman could not import it)"
else
	skip "containerd with bulkhead-oci" "$(cat "$TMP/ctrd.why")"
fi

# --- Docker: a runtime named in daemon.json ----------------------------------------------------
if [ -n "${OCI_IMAGE:-}" ] && oci_dockerd_start "$TMP/dockerd" bulkhead "$OCI" 2> "$TMP/dockerd.why"; then
	dk() { oci_docker_cmd "$@"; }
	ref_out=$(dk run --rm --network none "$OCI_IMAGE" python3 -c "$PROG" 2>&1); ref_rc=$?
	out=$(dk run --rm --network none --runtime bulkhead "$OCI_IMAGE" python3 -c "$PROG" 2>&1); rc=$?
	same "docker run --runtime bulkhead: output and exit code as with runc" "$ref_out" "$ref_rc" "$out" "$rc"
	dk run -d --name "t-$$" --network none --runtime bulkhead "$OCI_IMAGE" sh -c \
		'trap "exit 7" TERM; while :; do sleep 0.1; done' > /dev/null 2>&1
	ex=$(dk exec "t-$$" sh -c 'echo exec-out; exit 4' 2>&1); ex_rc=$?
	dk stop -t 20 "t-$$" > /dev/null 2>&1
	st=$(dk inspect "t-$$" --format '{{.State.ExitCode}}' 2> /dev/null)
	dk rm -f "t-$$" > /dev/null 2>&1
	check_eq "docker exec and docker stop (TERM to the trap)" "exec-out 4 7" "$ex $ex_rc $st"
	oci_dockerd_stop
elif [ -z "${OCI_IMAGE:-}" ]; then
	skip "docker with bulkhead-oci" "no image (podman could not import it)"
else
	skip "docker with bulkhead-oci" "$(cat "$TMP/dockerd.why")"
fi

sleep 1
check_eq "nothing of any container's session is left (run directories, cgroups, processes)" "" "$(leftovers)"
plan_done
