#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: bulkhead-oci called directly, as conmon and containerd's shim call a runtime
# (tests/tools/oci_reaper.py adopts the supervisor as they do). A container's whole life
# (create, state, start, exec, kill, delete) with its output and exit status; signals reaching
# the command; the console socket; a bind mount as the share; the host name; the broker from
# annotations (an injected token reaches a local HTTPS API; without the scope, nothing does);
# and bad input: each refused with the error a caller expects and nothing left behind.
. "$(dirname "$0")/lib.sh"

OCI=$BIN/bulkhead-oci
ECHO=$BUILD/tests/https-echo
require "bulkhead-oci" "$OCI" "$ECHO" python3 openssl
if [ "$(id -u)" -ne 0 ]; then
	skip "bulkhead-oci" "needs root (a container's root is served by a jailed virtiofsd)"
	plan_done; exit 0
fi
if ! PY=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip); then
	not_ok "the test image is built (bulkhead image build)"; plan_done; exit 1
fi
STORE=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/images
ROOTFS=$(readlink -f "$STORE/names/$PY")/rootfs
export BULKHEAD_RUNDIR="$TMP/run"
STATE=$TMP/state
REAPER="python3 tests/tools/oci_reaper.py"
oci() { "$OCI" --root "$STATE" "$@"; }

# bundle DIR ARGS_JSON [PY_EDIT]: a bundle whose root is the (read-only) test image; PY_EDIT
# changes the config dict `c` before it is written.
bundle() {
	mkdir -p "$1"
	python3 - "$1" "$ROOTFS" "$2" "${3:-}" << 'PY'
import json, sys
d, root, args, edit = sys.argv[1:5]
c = {"ociVersion": "1.0.2", "hostname": "oci-test",
     "root": {"path": root, "readonly": True},
     "process": {"args": json.loads(args), "cwd": "/", "user": {"uid": 0, "gid": 0},
                 "env": ["PATH=/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root", "MARK=from-config"]},
     "mounts": [{"destination": "/proc", "type": "proc", "source": "proc"},
                {"destination": "/dev", "type": "tmpfs", "source": "tmpfs"},
                {"destination": "/etc/resolv.conf", "type": "bind", "source": "/etc/resolv.conf",
                 "options": ["rbind", "ro"]}],
     "linux": {"resources": {"memory": {"limit": 268435456}}}}
exec(edit)
json.dump(c, open(d + "/config.json", "w"))
PY
}
# leftovers ID: what of container ID's session is still on the host (nothing, when clean).
leftovers() {
	ls "$STATE/$1" 2> /dev/null
	ls "$BULKHEAD_RUNDIR" 2> /dev/null
	find /sys/fs/cgroup -maxdepth 6 -name 'bulkhead-*' -newer "$TMP/t0" 2> /dev/null |
		grep -E '/bulkhead-[0-9a-f]{16}$'
	pgrep -f "$BULKHEAD_RUNDIR" 2> /dev/null
}
touch "$TMP/t0"
# status_of ID: the "status" of `state ID`.
status_of() { oci state "$1" 2> /dev/null | python3 -c 'import json,sys; print(json.load(sys.stdin)["status"])' 2> /dev/null || echo none; }
# wait_file FILE: up to 60 s for FILE to exist.
wait_file() { i=0; while [ ! -s "$1" ] && [ $i -lt 600 ]; do sleep 0.1; i=$((i + 1)); done; }

# --- a whole life: create, state, start, output, exit status, delete ------------------------
bundle "$TMP/b1" '["sh", "-c", "echo out $MARK $(hostname); echo err >&2; read x; echo got $x; exit 3"]'
echo line-in | $REAPER "$TMP/b1.status" -- "$OCI" --root "$STATE" --log "$TMP/b1.log" \
	--log-format json create --bundle "$TMP/b1" --pid-file "$TMP/b1.pid" c1 \
	> "$TMP/b1.out" 2> "$TMP/b1.err" &
wait_file "$TMP/b1.status.create"
check_eq "create exits 0 once the guest is ready" 0 "$(cat "$TMP/b1.status.create")"
pid=$(cat "$TMP/b1.pid" 2> /dev/null)
[ -n "$pid" ] && kill -0 "$pid" 2> /dev/null && ok "--pid-file names the live supervisor" ||
	not_ok "--pid-file names the live supervisor" "pid: $pid"
check_eq "state says created before start" created "$(status_of c1)"
oci state c1 | python3 -c '
import json, sys
s = json.load(sys.stdin)
assert s["id"] == "c1" and s["pid"] > 0 and s["bundle"].endswith("/b1") and s["ociVersion"], s
' && ok "state is the OCI state JSON (id, pid, bundle, ociVersion)" || not_ok "state is the OCI state JSON"
grep -q '"level": *"info".*mount /proc: the guest' "$TMP/b1.log" &&
	grep -q 'mount /etc/resolv.conf: not used: the guest has no network' "$TMP/b1.log" &&
	ok "--log (json) says which mounts the guest provides and which are left out" ||
	not_ok "--log says what happened to each mount" "$(cat "$TMP/b1.log")"
oci start c1
check_eq "start exits 0" 0 "$?"
wait_file "$TMP/b1.status"
check_eq "the supervisor exits with the command's status" 3 "$(cat "$TMP/b1.status")"
check_eq "stdout carries the command's output (config env, hostname, stdin)" \
	"out from-config oci-test
got line-in" "$(cat "$TMP/b1.out")"
grep -qx err "$TMP/b1.err" && ok "stderr carries the command's stderr" ||
	not_ok "stderr carries the command's stderr" "$(cat "$TMP/b1.err")"
check_eq "state says stopped after the command ends" stopped "$(status_of c1)"
oci delete c1
check_eq "delete of a stopped container exits 0" 0 "$?"
check_eq "nothing of the container is left after delete" "" "$(leftovers c1)"

# --- credential files in a bind mount's source: refused, or hidden by the annotation ----------
mkdir -p "$TMP/creds" && echo "KEY=OCISECRET42x" > "$TMP/creds/.env" && echo plain-ok > "$TMP/creds/ok.txt"
creds="c['mounts'].append({'destination': '/mnt', 'type': 'bind', 'source': '$TMP/creds', 'options': ['rbind', 'ro']})"
bundle "$TMP/b10" '["sh", "-c", "cat /mnt/ok.txt; wc -c < /mnt/.env"]' "$creds"
"$OCI" --root "$STATE" create --bundle "$TMP/b10" c10 > /dev/null 2> "$TMP/b10.err" < /dev/null
rc=$?
if [ $rc -ne 0 ] && grep -q 'holds credential files.*\.env (a \.env with values)' "$TMP/b10.err" &&
	[ -z "$(leftovers c10)" ]; then
	ok "a bind mount whose source holds a .env: create refuses, naming it"
else
	not_ok "a bind mount holding a .env is refused" "rc=$rc" "$(cat "$TMP/b10.err")"
fi
oci delete --force c10 > /dev/null 2>&1
bundle "$TMP/b11" '["sh", "-c", "cat /mnt/ok.txt; wc -c < /mnt/.env"]' \
	"$creds
c['annotations'] = {'io.bulkhead.share-secrets': 'hide'}"
$REAPER "$TMP/b11.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b11" c11 \
	> "$TMP/b11.out" 2> "$TMP/b11.err" < /dev/null &
wait_file "$TMP/b11.status.create"
oci start c11
wait_file "$TMP/b11.status"
if [ "$(tr -d ' ' < "$TMP/b11.out" | tr '\n' ' ')" = "plain-ok 0 " ] &&
	! grep -q OCISECRET42x "$TMP/b11.out" "$TMP/b11.err"; then
	ok "io.bulkhead.share-secrets hide: the .env is an empty file in the container, the rest as it is"
else
	not_ok "io.bulkhead.share-secrets hide" "$(cat "$TMP/b11.out" "$TMP/b11.err")"
fi
oci delete c11 > /dev/null 2>&1

# --- signals: kill passes TERM to the command; KILL ends the session -------------------------
bundle "$TMP/b2" '["sh", "-c", "trap \"echo got-term; exit 7\" TERM; echo ready; while :; do sleep 0.1; done"]'
$REAPER "$TMP/b2.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b2" c2 \
	> "$TMP/b2.out" 2> "$TMP/b2.err" < /dev/null &
wait_file "$TMP/b2.status.create"
oci start c2
i=0; while ! grep -q ready "$TMP/b2.out" && [ $i -lt 300 ]; do sleep 0.1; i=$((i + 1)); done
check_eq "state says running after start" running "$(status_of c2)"
oci delete c2 2> "$TMP/del.err"
rc=$?
[ $rc -ne 0 ] && grep -q "not stopped" "$TMP/del.err" && [ "$(status_of c2)" = running ] &&
	ok "delete of a running container without --force is refused; it keeps running" ||
	not_ok "delete of a running container without --force is refused" "rc=$rc $(cat "$TMP/del.err")"
printf '{"ociVersion":"1.0.2","args":["sh","-c","echo exec $MARK $(id -u); exit 4"],"cwd":"/tmp","env":["MARK=from-process"],"user":{"uid":0,"gid":0}}' > "$TMP/proc.json"
oci exec --process "$TMP/proc.json" c2 > "$TMP/exec.out" 2>&1
check_eq "exec --process runs in the guest with its own env; its status is ours" \
	"exec from-process 0 / 4" "$(tr '\n' ' ' < "$TMP/exec.out")/ $?"
oci exec --process "$TMP/proc.json" --detach --pid-file "$TMP/exec.pid" c2 > /dev/null 2>&1
check_eq "exec --detach returns once the command started, with its pid" 0 "$?$(test -s "$TMP/exec.pid" || echo ' (no pid file)')"
printf '{"ociVersion":"1.0.2","args":["id"],"cwd":"/","user":{"uid":1000,"gid":1000}}' > "$TMP/proc-user.json"
oci exec --process "$TMP/proc-user.json" c2 > /dev/null 2> "$TMP/exec-user.err"
[ $? -ne 0 ] && grep -q "container's user" "$TMP/exec-user.err" &&
	ok "exec as another user is refused, not silently run as the container's" ||
	not_ok "exec as another user is refused" "$(cat "$TMP/exec-user.err")"
oci kill c2 TERM
wait_file "$TMP/b2.status"
check_eq "kill TERM reaches the command's trap; its status is the supervisor's" "7 got-term" \
	"$(cat "$TMP/b2.status") $(grep -o got-term "$TMP/b2.out")"
oci kill c2 TERM 2> "$TMP/kill.err"
[ $? -ne 0 ] && grep -q "not running" "$TMP/kill.err" && ok "kill of a stopped container: 'container not running'" ||
	not_ok "kill of a stopped container fails as runc's does" "$(cat "$TMP/kill.err")"
oci delete c2

bundle "$TMP/b3" '["sleep", "1000"]'
$REAPER "$TMP/b3.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b3" c3 > /dev/null 2>&1 < /dev/null &
wait_file "$TMP/b3.status.create"
oci start c3
sleep 1
oci kill c3 KILL
wait_file "$TMP/b3.status"
check_eq "kill KILL ends the container (killed by signal 9)" 137 "$(cat "$TMP/b3.status")"
[ -n "$(ls "$BULKHEAD_RUNDIR" 2> /dev/null)" ] && ok "a supervisor killed with KILL left its run directory (delete's to remove)" ||
	not_ok "a supervisor killed with KILL left its run directory, for delete to remove" \
		"none there: the check of delete's cleanup below would prove nothing"
sleep 0.5
# delete finds the run directory where create saw it, whatever its own environment says.
BULKHEAD_RUNDIR=$TMP/elsewhere oci delete c3
check_eq "delete after KILL (from another BULKHEAD_RUNDIR) leaves nothing: state, run directory, cgroups, processes" "" "$(leftovers c3)"

# A created container that is never started: delete --force ends it.
$REAPER "$TMP/b4.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b3" c4 > /dev/null 2>&1 < /dev/null &
wait_file "$TMP/b4.status.create"
oci delete --force c4
wait_file "$TMP/b4.status"
check_eq "delete --force of a created container ends it and leaves nothing" "" "$(leftovers c4)"
oci delete --force c4
check_eq "delete --force of a container that is gone exits 0 (as runc)" 0 "$?"

# --- the console socket: a terminal in the guest, relayed ------------------------------------
bundle "$TMP/b5" '["sh", "-c", "echo ready; read x; echo typed=$x; tty; stty size"]' \
	'c["process"]["terminal"] = True; c["process"]["consoleSize"] = {"height": 33, "width": 101}'
python3 tests/tools/oci_console.py "$TMP/console.sock" 'hello\r' > "$TMP/console.out" 2>&1 &
cpid=$!
wait_socket "$TMP/console.sock" 10
$REAPER "$TMP/b5.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b5" \
	--console-socket "$TMP/console.sock" c5 > /dev/null 2> "$TMP/b5.err" < /dev/null &
wait_file "$TMP/b5.status.create"
oci start c5
wait_file "$TMP/b5.status"
wait $cpid
tr -d '\r' < "$TMP/console.out" > "$TMP/console.txt"
grep -q '^console: /dev/pts/' "$TMP/console.txt" && grep -q '^typed=hello$' "$TMP/console.txt" &&
	grep -q '^/dev/pts/' "$TMP/console.txt" && grep -q '^33 101$' "$TMP/console.txt" &&
	ok "--console-socket: the caller's terminal is the command's (input, tty, consoleSize)" ||
	not_ok "--console-socket carries the command's terminal" "$(cat "$TMP/console.txt")" "$(cat "$TMP/b5.err")"
oci delete c5
# A terminal container whose guest cannot start: the reason is create's (the caller's), not
# lost on a terminal nobody watches yet.
mkdir -p "$TMP/b9src"
bundle "$TMP/b9" '["true"]' "c[\"process\"][\"terminal\"] = True
c[\"mounts\"].append({\"destination\": \"/no/such/dir\", \"type\": \"bind\", \"source\": \"$TMP/b9src\", \"options\": [\"rbind\"]})"
python3 tests/tools/oci_console.py "$TMP/console9.sock" '' > /dev/null 2>&1 &
cpid=$!
wait_socket "$TMP/console9.sock" 10
"$OCI" --root "$STATE" create --bundle "$TMP/b9" --console-socket "$TMP/console9.sock" c9 \
	> /dev/null 2> "$TMP/b9.err" < /dev/null
rc=$?
wait $cpid
[ $rc -ne 0 ] && grep -q "cannot mount a bind share" "$TMP/b9.err" && [ -z "$(leftovers c9)" ] &&
	ok "a terminal container that cannot boot: create fails and says why on its stderr" ||
	not_ok "a terminal container that cannot boot: create says why" "rc=$rc" "$(cat "$TMP/b9.err")"

# --- a bind mount is the share; the broker comes from annotations ---------------------------
if test_pki; then
	"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" 2> /dev/null &
	pids="$pids $!"
	PORT=$(wait_port "$TMP/port")
	SECRET='tok-OCI-5d1c0a9e-secret'
	"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
	printf '%s' "$SECRET" | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
	SCOPE="{\"secrets\": [{\"name\": \"api\", \"inject\": {\"header\": \"Authorization\", \"value\": \"Bearer {}\"}, \"destinations\": [{\"scheme\": \"https\", \"host\": \"localhost\", \"port\": $PORT, \"path_prefix\": \"/v1/\", \"allow_addresses\": [\"127.0.0.1\"]}]}], \"allow\": []}"
	mkdir "$TMP/data"
	cat > "$TMP/data/client.py" << PY
import requests
try:
    r = requests.get("https://localhost:$PORT/v1/oci")
    print("status", r.status_code, r.text.splitlines()[0])
except Exception as e:
    print("refused", type(e).__name__)
open("/srv/written", "w").write("from the guest\n")
print("ro-bind", open("/mnt/input.txt").read().strip())
try:
    open("/mnt/x", "w")
    print("ro-bind writable")
except OSError as e:
    print("ro-bind refuses writes", e.errno)
PY
	mkdir "$TMP/ro-data" && echo ro-content > "$TMP/ro-data/input.txt"
	bundle "$TMP/b6" '["python3", "/srv/client.py"]' "
c['mounts'].append({'destination': '/srv', 'type': 'bind', 'source': '$TMP/data', 'options': ['rbind', 'rw']})
c['mounts'].append({'destination': '/mnt', 'type': 'bind', 'source': '$TMP/ro-data', 'options': ['rbind', 'ro']})
c['annotations'] = {'io.bulkhead.scope': '''$SCOPE''', 'io.bulkhead.vault': '$TMP/vault',
                    'io.bulkhead.ca-file': '$TMP/ca.pem', 'io.bulkhead.audit': '$TMP/audit.log'}"
	$REAPER "$TMP/b6.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b6" c6 \
		> "$TMP/b6.out" 2> "$TMP/b6.err" < /dev/null &
	wait_file "$TMP/b6.status.create"
	oci start c6
	wait_file "$TMP/b6.status"
	grep -q "^status 200 GET /v1/oci" "$TMP/b6.out" &&
		check_eq "the upstream saw the injected token" 1 "$(grep -c "Authorization: Bearer $SECRET" "$TMP/upstream.log")" ||
		not_ok "a container with io.bulkhead.scope reaches the HTTPS API through the broker" "$(cat "$TMP/b6.out" "$TMP/b6.err")"
	check_eq "a bind-mounted directory is a share (the guest's write is on the host)" \
		"from the guest" "$(cat "$TMP/data/written" 2> /dev/null)"
	grep -q "^ro-bind ro-content$" "$TMP/b6.out" && grep -q "^ro-bind refuses writes 30$" "$TMP/b6.out" &&
		[ ! -e "$TMP/ro-data/x" ] && ok "a second, read-only bind: readable, and writes refused (EROFS)" ||
		not_ok "a second, read-only bind mount" "$(cat "$TMP/b6.out")"
	grep -qF "$SECRET" "$TMP/b6.out" "$TMP/b6.err" "$TMP/data/written" &&
		not_ok "the token is nowhere in the container's output or files" || ok "the token is nowhere in the container's output or files"
	oci delete c6
	bundle "$TMP/b7" '["python3", "/srv/client.py"]' "
c['mounts'].append({'destination': '/srv', 'type': 'bind', 'source': '$TMP/data', 'options': ['rbind']})"
	$REAPER "$TMP/b7.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b7" c7 \
		> "$TMP/b7.out" 2> "$TMP/b7.err" < /dev/null &
	wait_file "$TMP/b7.status.create"
	oci start c7
	wait_file "$TMP/b7.status"
	grep -q "^refused" "$TMP/b7.out" && [ "$(grep -c Authorization "$TMP/upstream.log")" -eq 1 ] &&
		ok "without io.bulkhead.scope the container reaches nothing" ||
		not_ok "without io.bulkhead.scope the container reaches nothing" "$(cat "$TMP/b7.out" "$TMP/b7.err")"
	oci delete c7
else
	not_ok "test PKI made with openssl"
fi

# --- a root that is a symbolic link, and a Kubernetes-sized environment ----------------------
ln -s "$ROOTFS" "$TMP/root-link"
bundle "$TMP/b10" '["sh", "-c", "echo $V299 $V0"]' "
c['root']['path'] = '$TMP/root-link'
c['process']['env'] += ['V%d=value-%d' % (i, i) for i in range(300)]"
$REAPER "$TMP/b10.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b10" c10 \
	> "$TMP/b10.out" 2> "$TMP/b10.err" < /dev/null &
wait_file "$TMP/b10.status.create"
oci start c10
wait_file "$TMP/b10.status"
check_eq "a symbolic link as root.path, and 300 environment entries" "value-299 value-0 / 0" \
	"$(cat "$TMP/b10.out") / $(cat "$TMP/b10.status")"
oci delete c10

# --- bad input: the error a caller expects, nothing left behind ------------------------------
# refused NAME ID BUNDLE PATTERN: create fails, says PATTERN, and leaves nothing.
refused() {
	"$OCI" --root "$STATE" create --bundle "$3" "$2" > /dev/null 2> "$TMP/refused.err" < /dev/null
	rc=$?
	if [ $rc -ne 0 ] && grep -q "$4" "$TMP/refused.err" && [ -z "$(leftovers "$2")" ]; then
		ok "$1"
	else
		not_ok "$1" "rc=$rc" "$(cat "$TMP/refused.err")" "left: $(leftovers "$2")"
	fi
}
mkdir -p "$TMP/bad1" && echo '{"ociVersion": "1.0.2", "process": ' > "$TMP/bad1/config.json"
refused "a malformed config.json is refused with its line" bad1 "$TMP/bad1" "config.json: line"
bundle "$TMP/bad2" '["true"]' 'c["root"]["path"] = "/nonexistent/rootfs"'
refused "a missing rootfs is refused" bad2 "$TMP/bad2" "root.path /nonexistent/rootfs"
bundle "$TMP/bad3" '["true"]' 'c["mounts"].append({"destination": "/mnt", "type": "nfs", "source": "srv:/x"})'
refused "an unknown mount type is refused, naming it" bad3 "$TMP/bad3" "/mnt (type nfs) is not supported"
bundle "$TMP/bad4" '["true"]' 'c["mounts"].append({"destination": "/etc/app.conf", "type": "bind", "source": "/etc/hostname"})'
refused "a bind mount of a file (not the network plumbing) is refused" bad4 "$TMP/bad4" "bind mount of a file"
bundle "$TMP/bad10" '["true"]' 'for m in ("/a", "/b", "/c"): c["mounts"].append({"destination": m, "type": "bind", "source": "/tmp"})'
refused "a third directory bind is refused (a virtio-fs device each)" bad10 "$TMP/bad10" "at most 2 directories"
bundle "$TMP/bad5" '["true"]' 'c["linux"]["resources"]["memory"]["limit"] = 16 << 20'
refused "a memory limit below a microVM's minimum is refused" bad5 "$TMP/bad5" "16 MiB"
bundle "$TMP/bad6" '["true"]' 'c["process"]["env"].append("X=a\nb")'
refused "an environment entry with a newline is refused" bad6 "$TMP/bad6" "process.env"
bundle "$TMP/bad7" '["true"]' 'c["process"]["terminal"] = True'
refused "a terminal without --console-socket is refused" bad7 "$TMP/bad7" "console-socket"
bundle "$TMP/bad8" '["true"]' 'c["annotations"] = {"io.bulkhead.vault": "relative/vault"}'
refused "a relative path in an io.bulkhead annotation is refused" bad8 "$TMP/bad8" "io.bulkhead.vault"
mkdir -p "$TMP/bad11" && mkfifo "$TMP/bad11/config.json"
refused "a config.json that is a FIFO is refused (not read for ever)" bad11 "$TMP/bad11" "not a regular file"
mkfifo "$TMP/scope.fifo"
bundle "$TMP/bad12" '["true"]' "c['annotations'] = {'io.bulkhead.scope': '$TMP/scope.fifo'}"
refused "an io.bulkhead.scope that is a FIFO is refused" bad12 "$TMP/bad12" "io.bulkhead.scope.*not a regular file"
mkdir -p "$TMP/secrets" && "$BULKHEAD" vault init --vault "$TMP/secrets/vault" > /dev/null 2>&1
bundle "$TMP/bad13" '["true"]' "
c['mounts'].append({'destination': '/srv', 'type': 'bind', 'source': '$TMP/secrets', 'options': ['rbind']})
c['annotations'] = {'io.bulkhead.scope': '{\"allow\": []}', 'io.bulkhead.vault': '$TMP/secrets/vault'}"
refused "a bind mount holding the session's vault is refused (the guest would read every secret)" bad13 "$TMP/bad13" "the vault.*within reach of the share"
bundle "$TMP/bad14" '["true"]' "
c['annotations'] = {'io.bulkhead.scope': '{\"allow\": []}', 'io.bulkhead.vault': '$ROOTFS/etc/passwd'}"
refused "a vault inside the container's root is refused (the root is served to the guest)" bad14 "$TMP/bad14" "the vault.*within reach of the share"
for id in -x .hidden; do
	"$OCI" --root "$STATE" create --bundle "$TMP/b1" -- "$id" > /dev/null 2> "$TMP/id.err" < /dev/null
	[ $? -ne 0 ] && grep -q "invalid container id" "$TMP/id.err" && ok "container id '$id' is refused (no command could name it later)" ||
		not_ok "container id '$id' is refused" "$(cat "$TMP/id.err")"
done
bundle "$TMP/bad9" '["true"]' 'c["process"]["user"]["uid"] = 70000'
refused "a uid beyond the served id range is refused" bad9 "$TMP/bad9" "process.user.uid"
"$OCI" --root "$STATE" create --bundle "$TMP/b1" "../escape" > /dev/null 2> "$TMP/id.err" < /dev/null
[ $? -ne 0 ] && grep -q "invalid container id" "$TMP/id.err" && [ ! -e "$TMP/escape" ] &&
	ok "a container id with a path in it is refused" || not_ok "a container id with a path is refused" "$(cat "$TMP/id.err")"

# A second create with a live container's id: refused, the first unaffected.
$REAPER "$TMP/b8.status" -- "$OCI" --root "$STATE" create --bundle "$TMP/b3" c8 > /dev/null 2>&1 < /dev/null &
wait_file "$TMP/b8.status.create"
"$OCI" --root "$STATE" create --bundle "$TMP/b3" c8 > /dev/null 2> "$TMP/dup.err" < /dev/null
[ $? -ne 0 ] && grep -q "already exists" "$TMP/dup.err" && [ "$(status_of c8)" = created ] &&
	ok "a second create with the same id is refused; the first is unaffected" ||
	not_ok "a second create with the same id is refused" "$(cat "$TMP/dup.err")" "$(status_of c8)"
oci start c8 && oci start c8 2> "$TMP/start2.err"
[ $? -ne 0 ] && grep -q "cannot start a container that is running" "$TMP/start2.err" &&
	ok "start of a running container is refused" || not_ok "start of a running container is refused" "$(cat "$TMP/start2.err")"
oci delete --force c8
wait_file "$TMP/b8.status"
check_eq "delete --force of a running container leaves nothing" "" "$(leftovers c8)"
"$OCI" --root "$STATE" frobnicate x 2> "$TMP/unknown.err"
[ $? -ne 0 ] && grep -q "unknown command 'frobnicate'" "$TMP/unknown.err" && ok "an unknown command is named" ||
	not_ok "an unknown command is named" "$(cat "$TMP/unknown.err")"
"$OCI" features | python3 -c 'import json,sys; f=json.load(sys.stdin); assert f["ociVersionMax"]' &&
	ok "features prints JSON" || not_ok "features prints JSON"
plan_done
