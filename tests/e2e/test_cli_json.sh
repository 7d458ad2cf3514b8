#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: --json on the commands that print state (start, doctor, image ls, policy
# explain). Every output is read with Python's json module (one document, nothing else on
# stdout) and checked against what is real: the id `start --json` prints is a session that exec
# and stop work on, with the work share, memory, vCPUs, broker and audit log it names; doctor's
# facts are its text's, line by line, and the host's (QEMU, kernel files, a broken jail);
# `image ls --json` gives an image's digest and its real size on disk; `policy explain --json`
# decides as the text does for every golden case. Malformed options: exit 125, a line on
# stderr, nothing on stdout.
. "$(dirname "$0")/lib.sh"

require "--json" python3
export BULKHEAD_RUNDIR="$TMP/run"
export XDG_STATE_HOME="$TMP/state" # default audit logs go here, not to the user's
G=$(cd "$(dirname "$0")/../golden/policy" && pwd)

# js FILE EXPR: EXPR over the JSON document j read from FILE, printed as JSON; "invalid: ..."
# when FILE is not exactly one JSON document.
js() {
	python3 -c '
import json, sys
try:
    j = json.load(open(sys.argv[1]))
except ValueError as e:
    print("invalid:", e); sys.exit(0)
print(json.dumps(eval(sys.argv[2])))' "$1" "$2" 2>&1
}

# refused NAME TEXT ARGS...: bulkhead ARGS exits 125 with one line on stderr, which holds TEXT
# (what is wrong), and nothing on stdout.
refused() {
	name=$1 text=$2
	shift 2
	run_capture "$@"
	if [ "$rc" = 125 ] && [ ! -s "$TMP/out" ] && [ "$(wc -l < "$TMP/err")" -eq 1 ] &&
		grep -qF -- "$text" "$TMP/err"; then
		ok "$name: exit 125, one line on stderr saying what is wrong, nothing on stdout"
	else
		not_ok "$name: exit 125, one line on stderr saying what is wrong ($text), nothing on stdout" "rc=$rc" \
			"stdout: $(head -c 300 "$TMP/out")" "stderr: $(cat "$TMP/err")"
	fi
}

# --- malformed options ----------------------------------------------------------------------
refused "doctor --json=1" "'--json=1'" doctor --json=1
refused "doctor --json --bogus" "'--bogus'" doctor --json --bogus
refused "image ls --json --json" "usage: bulkhead image ls [--json]" image ls --json --json
refused "image ls --jsn" "usage: bulkhead image ls [--json]" image ls --jsn
refused "policy explain --json=yes" "'--json' doesn't allow an argument" \
	policy explain --json=yes --scope "$G/good-scope.json" GET https://pypi.org/
refused "start --json=1" "'--json=1'" start --json=1
refused "start --json with a command" "takes no command" start --json -- true
refused "start --json with a work directory that does not exist" "$TMP/none" start --json --work "$TMP/none"
run_capture run --json -- true
if [ "$rc" = 125 ] && [ ! -s "$TMP/out" ] && grep -q "'bulkhead start'" "$TMP/err"; then
	ok "run --json is refused (exit 125), naming start"
else
	not_ok "run --json is refused, naming start" "rc=$rc" "$(cat "$TMP/out" "$TMP/err")"
fi

# --- policy explain: the JSON says what the text says, for every golden case --------------------
cat > "$TMP/explain_cmp.py" << 'EOF'
import json, sys
text, j = open(sys.argv[1]).read().splitlines(), json.load(open(sys.argv[2]))
lines = {}
for l in text:
    k, v = l.split(":", 1)
    lines.setdefault(k, []).append(v.strip())
want = {"decision": lines["decision"][0], "layer": lines["layer"][0], "rule": lines["rule"][0],
        "why": lines.get("why", [None])[0], "inject": lines.get("inject", []),
        "git_push_held_by_ref_rule": any(n.startswith("a git push here") for n in lines.get("note", [])),
        "scope_refused": next((n.split(": ", 1)[1] for n in lines.get("note", [])
                               if n.startswith("no session starts")), None)}
print("same" if want == j else "text says %s, JSON says %s" % (want, j))
EOF
diffs="" n=0
refusals=0
while read -r pol sc m u; do
	(cd "$G" && "$BULKHEAD" policy explain --policy "$pol" --scope "$sc" "$m" "$u") > "$TMP/ex.txt" 2> "$TMP/ex.txt.err"
	trc=$?
	(cd "$G" && "$BULKHEAD" policy explain --policy "$pol" --scope "$sc" --json "$m" "$u") > "$TMP/ex.json" 2> "$TMP/ex.err"
	jrc=$?
	if [ $trc != 0 ]; then # refused (the broker would refuse the URL): the same, and no JSON
		refusals=$((refusals + 1))
		if [ $jrc = $trc ] && [ ! -s "$TMP/ex.json" ] && cmp -s "$TMP/ex.err" "$TMP/ex.txt.err"; then r=same
		else r="text: $trc $(cat "$TMP/ex.txt.err"); JSON: $jrc $(cat "$TMP/ex.json" "$TMP/ex.err")"; fi
	else
		r=$(python3 "$TMP/explain_cmp.py" "$TMP/ex.txt" "$TMP/ex.json" 2>&1)
	fi
	[ "$r" = same ] || diffs="$diffs
$m $u: $r"
	n=$((n + 1))
done < "$G/explain.cases"
check_eq "policy explain --json equals the text field by field in all $n golden cases ($refusals refused the same way)" "" "$diffs"
(cd "$G" && "$BULKHEAD" policy explain --policy good-policy.json --scope good-scope.json --json GET https://api.example.com/repos/me/app) > "$TMP/ex.json"
check_eq "policy explain --json: an allowed request (allow, by the scope's secret rule, injecting it)" \
	'["allow", "scope", "secret:api", null, ["api"]]' "$(js "$TMP/ex.json" '[j[k] for k in ("decision", "layer", "rule", "why", "inject")]')"
(cd "$G" && "$BULKHEAD" policy explain --policy good-policy.json --scope good-scope.json --json GET https://intranet.corp.example/) > "$TMP/ex.json"
check_eq "policy explain --json: a denied request (deny, global, the rule and why)" \
	'["deny", "global", "deny_hosts:*.corp.example", "denied by the global policy: intranet.corp.example is never reachable", []]' \
	"$(js "$TMP/ex.json" '[j[k] for k in ("decision", "layer", "rule", "why", "inject")]')"
run_capture policy explain --scope "$G/good-scope.json" --json GET not-a-url
check_eq "policy explain --json with a bad URL: 125, the reason on stderr, nothing on stdout" \
	"125 0 1" "$rc $(wc -c < "$TMP/out") $(grep -c 'not an absolute' "$TMP/err")"

# --- doctor -------------------------------------------------------------------------------------
"$BULKHEAD" doctor > "$TMP/doc.txt" 2> /dev/null
trc=$?
"$BULKHEAD" doctor --json > "$TMP/doc.json" 2> "$TMP/doc.err"
jrc=$?
check_eq "doctor --json exits as doctor does, and ok says so" "$trc $([ $trc = 0 ] && echo true || echo false)" \
	"$jrc $(js "$TMP/doc.json" 'j["ok"]')"
auto_text=$(sed -n 's/^engine auto: \([a-z]*\) .*/\1/p' "$TMP/doc.txt")
check_eq "doctor --json's engine choice is the text's ($auto_text)" "\"$auto_text\"" \
	"$(js "$TMP/doc.json" 'j["engine_auto"]["engine"] or "none"')"
cat > "$TMP/doctor_cmp.py" << 'EOF'
# Every text line has its key, every key its line, and each string or integer in a part
# (paths, versions, reasons, uid, cgroup version; mode and result as words) is on its line.
import json, sys
j = json.load(open(sys.argv[2]))
text = {}
for l in open(sys.argv[1]).read().splitlines():
    k, v = l.split(": ", 1)
    text[k.replace("-", "").replace(" ", "_")] = v
bad = []
if set(text) != set(j) - {"ok"}:
    bad.append("keys: text %s, JSON %s" % (sorted(text), sorted(j)))
for k, part in j.items():
    if k == "ok":
        continue
    for f, v in part.items():
        if isinstance(v, str):
            v = v.replace("not_probed", "not probed")
        elif isinstance(v, int) and not isinstance(v, bool):
            v = str(v)
        else:
            continue
        if f == "bzimage" and part.get("vmlinux"):
            v = "bzImage present"  # the text names the vmlinux, and says the bzImage is there
        if v not in text.get(k, ""):
            bad.append("%s.%s = %r is not on the line %r" % (k, f, v, text.get(k)))
print("\n".join(bad) if bad else "same")
EOF
check_eq "doctor --json: a key per text line, each value on its line" same \
	"$(python3 "$TMP/doctor_cmp.py" "$TMP/doc.txt" "$TMP/doc.json" 2>&1)"
QEMU=${BULKHEAD_QEMU:-$(command -v qemu-system-x86_64)}
QV=$("$QEMU" -version 2> /dev/null | sed -n 's/.*version \([^ (]*\).*/\1/p' | head -n 1)
check_eq "doctor --json: QEMU's path and version are the host's" "[\"$QEMU\", \"$QV\"]" \
	"$(js "$TMP/doc.json" '[j["qemu"]["path"], j["qemu"]["version"]]')"
check_eq "doctor --json: the guest kernel and initramfs are the installed files" \
	"[\"$(realpath "$LIBDIR/vmlinux")\", \"$(realpath "$LIBDIR/initramfs.cpio")\"]" \
	"$(js "$TMP/doc.json" '[j["guest_kernel"]["vmlinux"], j["guest_initramfs"]["path"]]')"
if [ -e /dev/kvm ]; then
	skip "doctor --json: no /dev/kvm, so kvm.usable is false" "this host has /dev/kvm"
else
	check_eq "doctor --json: no /dev/kvm, so kvm.usable is false and the probes were not run" \
		'[false, "not_probed", "not_probed"]' \
		"$(js "$TMP/doc.json" '[j["kvm"]["usable"], j["guest_kernel_mode"]["mode"], j["guest_ring3_syscall"]["result"]]')"
fi
# Without bulkhead-vsock beside it the jail cannot be tried: JSON still, ok false, exit 125.
mkdir "$TMP/bin" && cp "$BULKHEAD" "$TMP/bin/bulkhead"
"$TMP/bin/bulkhead" doctor --json > "$TMP/doc2.json" 2> "$TMP/doc2.err"
rc=$?
check_eq "doctor --json where the jail cannot run: exit 125, jail.works and ok false, why named, stderr says so" \
	'125 [false, false, true] 1' \
	"$rc $(js "$TMP/doc2.json" '[j["jail"]["works"], j["ok"], "bulkhead-vsock" in j["jail"]["why"]]') $(grep -c 'jail cannot run' "$TMP/doc2.err")"

# --- image ls -----------------------------------------------------------------------------------
export BULKHEAD_CACHE="$TMP/cache"
run_capture image ls --json
check_eq "image ls --json with no store yet: [] and exit 0" "0 []" "$rc $(js "$TMP/out" j)"
IMG=
if ! command -v skopeo > /dev/null || ! command -v umoci > /dev/null || ! command -v busybox > /dev/null; then
	skip "image ls --json on an imported image" "skopeo, umoci or busybox missing (make deps)"
else
	# A busybox image as an OCI layout, one layer.
	R=$TMP/root
	mkdir -p "$R/bin" "$R/etc"
	cp "$(command -v busybox)" "$R/bin/busybox"
	for a in sh true cat nproc; do ln -s busybox "$R/bin/$a"; done
	printf 'root:x:0:0:root:/root:/bin/sh\n' > "$R/etc/passwd"
	tar --numeric-owner --owner=0 --group=0 -C "$R" -cf "$TMP/layer.tar" .
	python3 - "$TMP/lay" "$TMP/layer.tar" << 'EOF'
import hashlib, json, os, sys
out, layer = sys.argv[1], open(sys.argv[2], "rb").read()
os.makedirs(out + "/blobs/sha256")
def blob(data, mt):
    h = hashlib.sha256(data).hexdigest()
    open(f"{out}/blobs/sha256/{h}", "wb").write(data)
    return {"mediaType": mt, "digest": "sha256:" + h, "size": len(data)}
l = blob(layer, "application/vnd.oci.image.layer.v1.tar")
c = blob(json.dumps({"architecture": "amd64", "os": "linux", "config": {},
                     "rootfs": {"type": "layers", "diff_ids": [l["digest"]]}}).encode(),
         "application/vnd.oci.image.config.v1+json")
m = blob(json.dumps({"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json",
                     "config": c, "layers": [l]}).encode(), "application/vnd.oci.image.manifest.v1+json")
m["annotations"] = {"org.opencontainers.image.ref.name": "t"}
open(out + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [m]}))
open(out + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
EOF
	if "$BULKHEAD" image import bb "$TMP/lay" > "$TMP/imp.out" 2>&1; then
		IMG=bb
		ok "a busybox image is imported for image ls and start --image"
	else
		not_ok "a busybox image is imported" "$(tail -n 3 "$TMP/imp.out")"
	fi
fi
if [ -n "$IMG" ]; then
	ln -s "../sha256/$(printf '%064d' 0)" "$BULKHEAD_CACHE/images/names/broken"
	run_capture image ls --json
	cp "$TMP/out" "$TMP/ls.json"
	run_capture image ls
	cp "$TMP/out" "$TMP/ls.txt"
	hex=$(readlink "$BULKHEAD_CACHE/images/names/bb")
	hex=${hex#../sha256/}
	size=$(du -sB1 "$BULKHEAD_CACHE/images/names/bb/rootfs" | cut -f1)
	check_eq "image ls --json: the image, its digest and its real size on disk (du: $size bytes)" \
		"[\"bb\", \"sha256:$hex\", $size]" "$(js "$TMP/ls.json" '[j[0][k] for k in ("name", "digest", "size")]')"
	textrow=$(awk '$1 == "bb" { print $2, $3, $5, $6 }' "$TMP/ls.txt")
	check_eq "image ls --json: digest, size, created and source are the text's" "\"$textrow\"" \
		"$(js "$TMP/ls.json" '" ".join([j[0]["digest"][:19], "%.1f" % (j[0]["size"] / 2**20), j[0]["created"], j[0]["source"]])')"
	check_eq "image ls --json: a damaged name as {name, damaged}, the text's reason" \
		"[\"broken\", \"$(sed -n 's/^broken  *damaged: //p' "$TMP/ls.txt")\"]" \
		"$(js "$TMP/ls.json" '[j[1]["name"], j[1]["damaged"]]')"
	rm "$BULKHEAD_CACHE/images/names/broken"
fi

# --- start --json -------------------------------------------------------------------------------
if [ "$trc" != 0 ]; then
	skip "start --json" "no engine runs sessions here (bulkhead doctor)"
	plan_done; exit 0
fi
FIELDS='["audit_log", "broker", "cpus", "created_at", "id", "image", "mem_mib", "pooled", "state", "timeout_s", "work", "work_ro"]'
mkdir -p "$TMP/work" && echo "marker $$" > "$TMP/work/marker"
printf '{ "allow": [ { "scheme": "https", "host": "example.com" } ] }\n' > "$TMP/scope.json"

# A session with a read-only share, limits, a timeout and a private broker.
t0=$(date +%s)
run_capture start --json --work "$TMP/work:ro" --mem 160 --cpus 2 --timeout 300 --scope "$TMP/scope.json"
t1=$(date +%s)
cp "$TMP/out" "$TMP/s1.json"
check_eq "start --json: exit 0, one JSON object with the API's session fields" "0 $FIELDS" \
	"$rc $(js "$TMP/s1.json" 'sorted(j)')"
ID=$(js "$TMP/s1.json" 'j["id"]' | tr -d '"')
check_eq "start --json: running, not pooled, no image, the work share (absolute), read-only, a private broker" \
	"[\"running\", false, null, \"$(realpath "$TMP/work")\", true, \"private\"]" \
	"$(js "$TMP/s1.json" '[j[k] for k in ("state", "pooled", "image", "work", "work_ro", "broker")]')"
check_eq "start --json: mem_mib, cpus and timeout_s as asked" "[160, 2, 300]" \
	"$(js "$TMP/s1.json" '[j[k] for k in ("mem_mib", "cpus", "timeout_s")]')"
check_eq "start --json: created_at is the time of the start (Unix seconds)" true \
	"$(js "$TMP/s1.json" "$t0 <= j['created_at'] <= $t1 + 1")"
"$BULKHEAD" exec "$ID" -- sh -c 'cat /work/marker; nproc; grep MemTotal /proc/meminfo' > "$TMP/x.out" 2>&1
xrc=$?
mem=$(awk '/MemTotal/ { print int($2 / 1024) }' "$TMP/x.out")
if [ $xrc = 0 ] && [ "$(head -n 2 "$TMP/x.out" | tr '\n' ' ')" = "marker $$ 2 " ] && [ "$mem" -le 160 ] && [ "$mem" -gt 96 ]; then
	ok "bulkhead exec on start --json's id: the work share, 2 vCPUs, 160 MiB (MemTotal $mem MiB)"
else
	not_ok "bulkhead exec on start --json's id sees the share, vCPUs and memory" "rc=$xrc" "$(cat "$TMP/x.out")"
fi
"$BULKHEAD" exec "$ID" -- sh -c 'cat /work/marker > /dev/null && ! (echo x > /work/w) 2> /dev/null' > /dev/null 2>&1
check_eq "the share start --json calls read-only is: the guest reads it, a write fails" "0 no" \
	"$? $([ -e "$TMP/work/w" ] && echo yes || echo no)"
vm=$(cat "/proc/$(vm_pid)/comm" 2> /dev/null)
check_eq "the session runs on the engine doctor --json says auto picks" \
	"$(js "$TMP/doc.json" '{"qemu": "qemu-system-x86", "kvm": "bulkhead-vmm"}.get(j["engine_auto"]["engine"])' | tr -d '"')" "$vm"
AUDIT=$(js "$TMP/s1.json" 'j["audit_log"]' | tr -d '"')
check_eq "start --json: audit_log is the session's own log (the default place), recording this session" \
	"$TMP/state/bulkhead/audit/$ID.log [\"$ID\"]" \
	"$AUDIT $(python3 -c 'import json,sys; print(json.dumps(sorted({json.loads(l)["session"] for l in open(sys.argv[1])})))' "$AUDIT" 2>&1)"
"$BULKHEAD" stop "$ID" > /dev/null 2>&1
src=$?
"$BULKHEAD" exec "$ID" -- true > /dev/null 2>&1
xrc=$?
check_eq "bulkhead stop on start --json's id stops it (exec then fails)" "0 125" "$src $xrc"
"$BULKHEAD" audit verify "$AUDIT" > /dev/null 2>&1
check_eq "the audit log start --json named verifies after the session" 0 "$?"

# A bare session: nulls and defaults.
run_capture start --json
cp "$TMP/out" "$TMP/s2.json"
ID=$(js "$TMP/s2.json" 'j["id"]' | tr -d '"')
check_eq "start --json without options: no work, no broker, no audit log, 256 MiB, 1 vCPU, no timeout" \
	'[null, false, null, null, 256, 1, 0]' \
	"$(js "$TMP/s2.json" '[j[k] for k in ("work", "work_ro", "broker", "audit_log", "mem_mib", "cpus", "timeout_s")]')"
"$BULKHEAD" exec "$ID" -- true > /dev/null 2>&1
xrc=$?
"$BULKHEAD" stop "$ID" > /dev/null 2>&1
check_eq "exec and stop work on the bare session's id" "0 0" "$xrc $?"

# On the image, with a relative --audit path, a writable share and the policy's lifetime.
if [ -n "$IMG" ] && [ "$(id -u)" = 0 ]; then
	printf '{ "limits": { "max_session_seconds": 900 } }\n' > "$TMP/policy.json"
	(cd "$TMP" && "$BULKHEAD" start --json --image bb --work work --audit rel-audit.log \
		--scope scope.json --policy policy.json > "$TMP/s3.json" 2> "$TMP/s3.err")
	check_eq "start --json --image: the image, the share read-write, the --audit path made absolute, the policy's lifetime" \
		"[\"bb\", \"$(realpath "$TMP/work")\", false, \"private\", \"$TMP/rel-audit.log\", 900]" \
		"$(js "$TMP/s3.json" '[j[k] for k in ("image", "work", "work_ro", "broker", "audit_log", "timeout_s")]')"
	ID=$(js "$TMP/s3.json" 'j["id"]' | tr -d '"')
	"$BULKHEAD" exec "$ID" -- sh -c 'echo from-image > /work/w' > /dev/null 2>&1
	xrc=$?
	"$BULKHEAD" stop "$ID" > /dev/null 2>&1
	src=$?
	check_eq "exec (writing the share) and stop work on the image session's id; its audit log exists" \
		"0 0 from-image yes" "$xrc $src $(cat "$TMP/work/w" 2> /dev/null) $([ -s "$TMP/rel-audit.log" ] && echo yes)"
else
	skip "start --json --image" "needs root and the imported image"
fi

# Registered with a shared broker: "shared", and no audit log of start's to name.
CTL=$TMP/broker.sock
mkdir -p "$TMP/shared-audit"
"$BULKHEAD" broker --control "$CTL" --audit-dir "$TMP/shared-audit" 2> "$TMP/broker.err" &
pids="$pids $!"
wait_socket "$CTL" 5
run_capture start --json --broker "$CTL" --scope "$TMP/scope.json"
cp "$TMP/out" "$TMP/s4.json"
check_eq "start --json --broker: broker is shared, audit_log null" '[0, "shared", null]' \
	"$(js "$TMP/s4.json" "[$rc, j['broker'], j['audit_log']]")"
ID=$(js "$TMP/s4.json" 'j["id"]' | tr -d '"')
"$BULKHEAD" exec "$ID" -- true > /dev/null 2>&1
xrc=$?
"$BULKHEAD" stop "$ID" > /dev/null 2>&1
check_eq "exec and stop work on the shared-broker session's id" "0 0" "$xrc $?"

plan_done
