#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: sessions on images (--image). Real Debian images built with `bulkhead image
# build` (mmdebstrap, cached between runs by recipe: tests/tools/test_image.sh): a Python
# program (requests and urllib) and a Node program (fetch and https) reach an HTTPS API
# through the broker with an injected token that appears nowhere in the guest (output,
# environment, what it wrote, its RAM); the cached image is never changed; --keep-changes
# shows a session's writes; two sessions on one image do not see each other's; bad input is
# refused clearly.
. "$(dirname "$0")/lib.sh"

ECHO=$BUILD/tests/https-echo
require "image sessions" "$ECHO" "$BIN/bulkhead-broker" openssl mmdebstrap python3
if [ "$(id -u)" -ne 0 ]; then
	skip "image sessions" "needs root (the session's overlay of the image)"; plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
SECRET='tok-3b9e1f0c77d2-IMAGE-secret'

if ! PY=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip) ||
	! NODE=$(sh tests/tools/test_image.sh node nodejs); then
	not_ok "the test images are built (bulkhead image build)"; plan_done; exit 1
fi
STORE=${BULKHEAD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead}/images
ROOT=$STORE/names/$PY/rootfs

if ! test_pki; then
	not_ok "test PKI made with openssl"; plan_done; exit 1
fi
"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" \
	2> "$TMP/echo.err" &
pids="$pids $!"
PORT=$(wait_port "$TMP/port")
"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
printf '%s' "$SECRET" | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
cat > "$TMP/scope.json" << SCOPE
{ "secrets": [ { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "path_prefix": "/v1/", "allow_addresses": ["127.0.0.1", "::1"] } ] } ],
  "allow": [] }
SCOPE
BROKER="--scope $TMP/scope.json --vault $TMP/vault --ca-file $TMP/ca.pem --audit $TMP/audit.log"

# What the cached image is, to compare after every session has run.
fingerprint() {
	(cd "$ROOT" && find . -printf '%p %s %m %U %G %T@\n' | sort | sha256sum)
	sha256sum "$ROOT/etc/motd"
}
before=$(fingerprint)

# --- Python: requests and urllib, unchanged programs ------------------------------------------
cat > "$TMP/client.py" << PY
import os, requests, urllib.request
r = requests.get("https://localhost:$PORT/v1/requests")
print("requests", r.status_code, r.text.splitlines()[0])
body = urllib.request.urlopen("https://localhost:$PORT/v1/urllib").read().decode()
print("urllib", body.splitlines()[0])
print("environ", sorted(os.environ.items()))
open("/root/written-by-python", "w").write(r.text + body)
PY
mkdir "$TMP/work"
cp "$TMP/client.py" "$TMP/work/"
run_capture run --image "$PY" --work "$TMP/work" --keep-changes "$TMP/py-changes" \
	--ram-file "$TMP/py.ram" --engine qemu $BROKER -- sh -c 'python3 client.py; env; echo motd >> /etc/motd'
check_eq "a Python session on the image exits 0" 0 "$rc"
grep -q "^requests 200 GET /v1/requests" "$TMP/out" && grep -q "^urllib GET /v1/urllib" "$TMP/out" &&
	ok "Python requests and urllib reach the HTTPS API through the broker, unchanged" ||
	not_ok "Python requests and urllib reach the HTTPS API through the broker" "$(head -c 800 "$TMP/out")" "$(tail -n 5 "$TMP/err")"
check_eq "the upstream saw the injected token on both Python requests" 2 \
	"$(grep -c "Authorization: Bearer $SECRET" "$TMP/upstream.log")"
grep -q "^environ .*'HTTPS_PROXY'" "$TMP/out" && ok "the Python program sees its environment (printed, and checked below)" ||
	not_ok "the Python program sees its environment" "$(grep environ "$TMP/out")"
if grep -qF "$SECRET" "$TMP/out" "$TMP/err" || grep -rqF "$SECRET" "$TMP/py-changes" "$TMP/work"; then
	not_ok "the token is nowhere in the output, the environment or anything the guest wrote"
else
	ok "the token is nowhere in the output, the environment or anything the guest wrote"
fi
if [ -s "$TMP/py.ram" ] && grep -qaF "GET /v1/requests" "$TMP/py.ram"; then
	if grep -qaF "$SECRET" "$TMP/py.ram"; then
		not_ok "the token is nowhere in the guest's RAM"
	else
		ok "the token is nowhere in the $(($(stat -c %s "$TMP/py.ram") >> 20)) MiB of guest RAM (which holds the answers)"
	fi
else
	not_ok "the guest's RAM was kept for the scan and holds the answers"
fi

# --- pip from a private index that needs the token: pip as it is, through the broker -----------
# A one-module wheel made here, in a PEP 503 index served only to requests with the token.
mkdir -p "$TMP/index/simple/bhdemo"
python3 - "$TMP/index/simple/bhdemo" << 'PY'
import sys, zipfile
d = sys.argv[1]
files = {"bhdemo/__init__.py": "VALUE = 'installed through the broker'\n",
         "bhdemo-1.0.dist-info/METADATA": "Metadata-Version: 2.1\nName: bhdemo\nVersion: 1.0\n",
         "bhdemo-1.0.dist-info/WHEEL": "Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"}
files["bhdemo-1.0.dist-info/RECORD"] = "".join(f"{n},,\n" for n in files) + "bhdemo-1.0.dist-info/RECORD,,\n"
with zipfile.ZipFile(f"{d}/bhdemo-1.0-py3-none-any.whl", "w") as z:
    for n, t in files.items():
        z.writestr(n, t)
open(f"{d}/index.html", "w").write('<a href="bhdemo-1.0-py3-none-any.whl">bhdemo-1.0-py3-none-any.whl</a>\n')
PY
printf '%s' "$SECRET" > "$TMP/token"
python3 tests/tools/https_files.py --cert "$TMP/up.pem" --key "$TMP/up.key" --dir "$TMP/index" \
	--token-file "$TMP/token" --log "$TMP/index.log" > "$TMP/iport" 2> "$TMP/index.err" &
pids="$pids $!"
IPORT=$(wait_port "$TMP/iport")
sed "s/\"port\": $PORT,/\"port\": $IPORT,/; s|\"path_prefix\": \"/v1/\"|\"path_prefix\": \"/simple/\"|" \
	"$TMP/scope.json" > "$TMP/index-scope.json"
run_capture run --image "$PY" --scope "$TMP/index-scope.json" --vault "$TMP/vault" --ca-file "$TMP/ca.pem" \
	--audit "$TMP/audit.log" -e PIP_DISABLE_PIP_VERSION_CHECK=1 -e PIP_BREAK_SYSTEM_PACKAGES=1 -- \
	sh -c "pip install -q --index-url https://localhost:$IPORT/simple/ bhdemo && python3 -c 'import bhdemo; print(bhdemo.VALUE)'"
if [ "$rc" = 0 ] && grep -q "^installed through the broker" "$TMP/out" &&
	grep -q "GET /simple/bhdemo/bhdemo-1.0-py3-none-any.whl authorised" "$TMP/index.log"; then
	ok "pip installs from a private index that needs the token, through the broker, unchanged"
else
	not_ok "pip installs from a private index through the broker" "rc=$rc" "$(tail -n 5 "$TMP/out" "$TMP/err")" "$(cat "$TMP/index.log")"
fi
grep -qF "$SECRET" "$TMP/out" "$TMP/err" && not_ok "the token is nowhere in pip's output" ||
	ok "the token is nowhere in pip's output"

# --- Node: fetch() and https, unchanged programs --------------------------------------------------
run_capture run --image "$NODE" $BROKER -- node -e "
fetch('https://localhost:$PORT/v1/fetch').then(r => r.text()).then(t => console.log('fetch', t.split('\n')[0]));
require('https').get('https://localhost:$PORT/v1/https', r => { let d = ''; r.on('data', c => d += c);
  r.on('end', () => console.log('https', d.split('\n')[0])); });"
grep -q "^fetch GET /v1/fetch" "$TMP/out" && grep -q "^https GET /v1/https" "$TMP/out" &&
	ok "Node's fetch() and https reach the HTTPS API through the broker, unchanged" ||
	not_ok "Node's fetch() and https reach the HTTPS API through the broker" "rc=$rc" "$(head -c 800 "$TMP/out")" "$(tail -n 5 "$TMP/err")"
check_eq "the upstream saw the injected token on both Node requests" 2 \
	"$(grep "Authorization: Bearer $SECRET" "$TMP/upstream.log" | wc -l | awk '{print $1 - 2}')"
grep -qF "$SECRET" "$TMP/out" "$TMP/err" && not_ok "the token is nowhere in the Node session's output" ||
	ok "the token is nowhere in the Node session's output"

# --- the image itself: never changed; the session's changes kept where asked -------------------
check_eq "the cached image is byte-identical after sessions that wrote to it" "$before" "$(fingerprint)"
[ -f "$TMP/py-changes/root/written-by-python" ] && [ -f "$TMP/py-changes/etc/motd" ] &&
	ok "--keep-changes leaves the session's new and changed files on the host" ||
	not_ok "--keep-changes leaves the session's new and changed files on the host" "$(cd "$TMP/py-changes" && find . | head)"
run_capture run --image "$PY" --keep-changes "$TMP/rm-changes" -- rm /etc/hostname
if [ "$rc" = 0 ] && [ "$(stat -c '%F %t:%T' "$TMP/rm-changes/etc/hostname" 2> /dev/null)" = "character special file 0:0" ] &&
	[ -f "$ROOT/etc/hostname" ]; then
	ok "a deletion is kept as overlayfs's whiteout (0/0), the image's file untouched"
else
	not_ok "a deletion is kept as a whiteout" "rc=$rc" "$(stat -c '%F %t:%T' "$TMP/rm-changes/etc/hostname" 2>&1)"
fi
# Modes: the private tmpfs layer takes what package managers make; a layer on the host does not
# take set-ID or world-writable modes (nothing the guest leaves on the host runs as its owner).
run_capture run --image "$PY" -- sh -c 'touch /root/s; chmod 4755 /root/s && mkdir -m 1777 /root/t && echo modes-ok'
check_eq "the tmpfs write layer takes set-user-ID and 1777 modes (dpkg installing sudo)" "modes-ok" "$(cat "$TMP/out")"
run_capture run --image "$PY" --keep-changes "$TMP/mode-changes" -- sh -c \
	'touch /root/s; chmod 4755 /root/s; echo suid=$?; chmod 666 /root/s; echo o+w=$?'
if grep -q "^suid=1" "$TMP/out" && grep -q "^o+w=1" "$TMP/out" && [ ! -u "$TMP/mode-changes/root/s" ]; then
	ok "a write layer on the host (--keep-changes) refuses set-ID and world-writable modes"
else
	not_ok "a write layer on the host refuses set-ID and world-writable modes" "$(cat "$TMP/out")" "$(ls -l "$TMP/mode-changes/root" 2>&1)"
fi
# What the guest leaves in DIR may carry the image's modes (a touch copies a set-user-ID program
# up, mode and all, past virtiofsd's filter): DIR is 0700, and once the session is over what is
# in it loses set-ID bits and write permission for others.
run_capture run --image "$PY" --keep-changes "$TMP/suid-changes/" -- sh -c \
	'touch /usr/bin/su; ln /usr/bin/mount /mount-link; : > /tmp/x; mkdir /var/mail/d'
left=$(find "$TMP/suid-changes" \( -perm -4000 -o -perm -2000 -o -perm -0002 \) ! -type l)
if [ "$rc" = 0 ] && [ "$(stat -c %a "$TMP/suid-changes")" = 700 ] && [ -f "$TMP/suid-changes/usr/bin/su" ] &&
	[ -z "$left" ] && [ -u "$ROOT/usr/bin/su" ]; then
	ok "--keep-changes DIR/: made 0700, and the copied-up su, mount, /tmp and a set-gid directory lose set-ID and o+w"
else
	not_ok "--keep-changes DIR/: 0700, no set-ID or o+w left" "rc=$rc" "$(stat -c %a "$TMP/suid-changes" 2>&1)" "$left" "$(cat "$TMP/err")"
fi
mkdir -p "$TMP/share"
run_capture run --image "$PY" --work "$TMP/share" --keep-changes "$TMP/share/out" -- true
[ "$rc" = 125 ] && grep -q -- "--keep-changes (.*) is within reach of the share" "$TMP/err" && [ ! -e "$TMP/share/out" ] &&
	ok "--keep-changes inside the work share is refused (the guest would reach overlayfs's own files)" ||
	not_ok "--keep-changes inside the work share is refused" "rc=$rc" "$(cat "$TMP/err")"
# No symbolic link on DIR's path (a link a guest planted in its share must not redirect a later
# session's writes), and no --disk with it (the layer is DIR's file system).
mkdir "$TMP/victim" && ln -s "$TMP/victim" "$TMP/link"
run_capture run --image "$PY" --keep-changes "$TMP/link/kc" -- sh -c 'echo x > /root/planted'
if [ "$rc" = 125 ] && grep -q "symbolic link" "$TMP/err" && [ -z "$(ls -A "$TMP/victim")" ]; then
	ok "--keep-changes through a symbolic link is refused, nothing written where it points"
else
	not_ok "--keep-changes through a symbolic link is refused" "rc=$rc" "$(cat "$TMP/err")" "$(ls -A "$TMP/victim")"
fi
run_capture run --image "$PY" --keep-changes "$TMP/kd" --disk 64 -- true
[ "$rc" = 125 ] && grep -q -- "--disk" "$TMP/err" && [ ! -e "$TMP/kd" ] &&
	ok "--disk with --keep-changes is a usage error" || not_ok "--disk with --keep-changes is a usage error" "rc=$rc" "$(cat "$TMP/err")"
ls -d "$TMP"/*.bulkhead-work > /dev/null 2>&1 && not_ok "no overlay work directory is left beside --keep-changes" ||
	ok "no overlay work directory is left beside --keep-changes"

# Two sessions at once on one image: each sees its own writes only.
for n in 1 2; do
	"$BULKHEAD" run --image "$PY" --keep-changes "$TMP/c$n" -- sh -c \
		"echo session-$n > /root/mark; sleep 3; cat /root/mark; ls /root" > "$TMP/c$n.out" 2>&1 &
	eval "p$n=\$!"
done
wait "$p1"; r1=$?; wait "$p2"; r2=$?
if [ "$r1$r2" = 00 ] && [ "$(head -n 1 "$TMP/c1.out")" = session-1 ] &&
	[ "$(head -n 1 "$TMP/c2.out")" = session-2 ] && [ "$(cat "$TMP/c1/root/mark")" = session-1 ]; then
	ok "two concurrent sessions on one image see only their own writes"
else
	not_ok "two concurrent sessions on one image see only their own writes" "$r1 $r2" "$(cat "$TMP/c1.out" "$TMP/c2.out")"
fi

# --- the image's rules: PATH, HOME, working directory; -t; start/exec -------------------------------
run_capture run --image "$PY" -- sh -c 'echo "$PATH|$HOME|$(pwd)|$(id -u)"'
check_eq "commands run with the image's PATH and HOME, in its working directory, as its user" \
	"/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin|/root|/|0" "$(cat "$TMP/out")"
run_capture run --image "$PY" -e HOME=/tmp -e EXTRA=1 -- sh -c 'echo "$HOME $EXTRA"'
check_eq "-e wins over the image's environment" "/tmp 1" "$(cat "$TMP/out")"
run_capture run --image "$PY" -t -- sh -c 'tty; ls /usr/lib/python3.11/os.py'
grep -q "^/dev/pts/" "$TMP/out" && ok "-t gives the image's command a terminal" ||
	not_ok "-t gives the image's command a terminal" "$(cat "$TMP/out" "$TMP/err")"
run_capture run --image "$PY"
check_eq "run --image with no command runs the image's own (/bin/sh, with no input)" 0 "$rc"
id=$("$BULKHEAD" start --image "$PY" 2> "$TMP/start.err")
if [ -n "$id" ]; then
	"$BULKHEAD" exec "$id" -- sh -c 'echo hi > /root/x; python3 -c "import sys; print(sys.prefix)"; pwd' > "$TMP/x1" 2>&1
	"$BULKHEAD" exec "$id" -- cat /root/x > "$TMP/x2" 2>&1
	"$BULKHEAD" stop "$id" > /dev/null 2>&1
	check_eq "start/exec/stop on an image: the image's programs, one write layer for the session" \
		"/usr|/|hi" "$(cat "$TMP/x1" "$TMP/x2" | paste -sd'|' | sed 's/^hi|//')"
else
	not_ok "bulkhead start --image" "$(cat "$TMP/start.err")"
fi

# --- bad input ---------------------------------------------------------------------------------
run_capture run --image no-such-image-here -- true
if [ "$rc" = 125 ] && grep -q "no-such-image-here" "$TMP/err" && [ "$(wc -l < "$TMP/err")" = 1 ]; then
	ok "an unknown image: exit 125 and one line naming it"
else
	not_ok "an unknown image: exit 125 and one line naming it" "rc=$rc" "$(cat "$TMP/err")"
fi
mkdir -p "$TMP/full" && touch "$TMP/full/x"
run_capture run --image "$PY" --keep-changes "$TMP/full" -- true
if [ "$rc" = 125 ] && grep -q "not an empty directory" "$TMP/err" && [ -f "$TMP/full/x" ]; then
	ok "--keep-changes on a directory with files is refused, the files untouched"
else
	not_ok "--keep-changes on a non-empty directory is refused" "rc=$rc" "$(cat "$TMP/err")"
fi
run_capture run --disk 64 -- true
[ "$rc" = 125 ] && grep -q -- "--image" "$TMP/err" && ok "--disk without --image is a usage error" ||
	not_ok "--disk without --image is a usage error" "rc=$rc" "$(cat "$TMP/err")"
# A write layer that fills up: the guest sees "no space", the session goes on.
run_capture run --image "$PY" --disk 16 -- sh -c 'dd if=/dev/zero of=/root/big bs=1M count=64 2>&1; echo after=ok'
if grep -q "No space left" "$TMP/out" && grep -q "^after=ok" "$TMP/out"; then
	ok "a full write layer (--disk 16) is ENOSPC in the guest, and the session goes on"
else
	not_ok "a full write layer is ENOSPC in the guest" "rc=$rc" "$(cat "$TMP/out" "$TMP/err" | tail -n 5)"
fi
# virtiofsd holds a descriptor per inode the guest has seen: thousands of new files still work.
run_capture run --image "$PY" -- sh -c 'mkdir /root/m && cd /root/m && i=0
	while [ $i -lt 6000 ]; do : > f$i; i=$((i + 1)); done; ls | wc -l; python3 -c "print(\"root-ok\")"'
check_eq "a session makes 6,000 files in its write layer (and its root still works after)" "6000
root-ok" "$(cat "$TMP/out")"
check_eq "no run directory or mount is left" "" "$(ls -A "$BULKHEAD_RUNDIR"; grep "$TMP" /proc/self/mountinfo)"
plan_done
