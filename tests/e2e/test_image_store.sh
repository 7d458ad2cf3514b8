#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end (host only, no VM): the image store (image/). Imports of an OCI layout, an OCI
# archive and a docker-archive made here by hand from busybox (a whiteout honoured, hard links
# kept, device nodes removed, the OCI config in image.json); ls, ls --json, rm; bad names; corrupt,
# truncated and hostile archives (paths leaving the root, symbolic and hard links out of it); a
# full disk; stale work directories; builds refused, failing, and stopped half-way (a real
# mmdebstrap build with BULKHEAD_TEST_IMAGE_BUILD=1). Every failure must leave tmp/ empty and no
# name behind. All in a private BULKHEAD_CACHE.
. "$(dirname "$0")/lib.sh"

if [ ! -x "$BULKHEAD" ]; then
	skip "image store" "bulkhead not built (run make)"
	plan_done; exit 0
fi
require "image store" skopeo umoci python3 busybox flock
export BULKHEAD_CACHE="$TMP/cache"
S=$BULKHEAD_CACHE/images
H=$TMP/host # stands for the host's files: nothing may appear here
mkdir -p "$H" && echo host > "$H/hostfile"

# oci.py layer OUT ENTRY...: a layer tar from entries f:NAME (a file), w:NAME (an empty file,
# e.g. a whiteout), s:NAME:TARGET, h:NAME:TARGET, c:NAME:MAJ:MIN, b:NAME:MAJ:MIN, names as given.
# oci.py layout DIR CONFIG LAYER...: an OCI image layout (tag "t") with the layers in order.
cat > "$TMP/oci.py" << 'EOF'
import hashlib, io, json, os, sys, tarfile
def layer(out, entries):
    t = tarfile.open(out, "w", format=tarfile.GNU_FORMAT)
    for e in entries:
        k, name, *rest = e.split(":")
        i = tarfile.TarInfo(name)
        data = b"x\n" if k == "f" else b""
        if k in "sh": i.type, i.linkname = {"s": tarfile.SYMTYPE, "h": tarfile.LNKTYPE}[k], rest[0]
        if k in "cb": i.type, i.devmajor, i.devminor = {"c": tarfile.CHRTYPE, "b": tarfile.BLKTYPE}[k], int(rest[0]), int(rest[1])
        i.size = len(data)
        t.addfile(i, io.BytesIO(data))
    t.close()
def layout(out, cfg, layers):
    os.makedirs(out + "/blobs/sha256", exist_ok=True)
    def blob(data):
        h = hashlib.sha256(data).hexdigest()
        open(f"{out}/blobs/sha256/{h}", "wb").write(data)
        return {"digest": "sha256:" + h, "size": len(data)}
    ls = [dict(blob(open(p, "rb").read()), mediaType="application/vnd.oci.image.layer.v1.tar") for p in layers]
    conf = {"architecture": "amd64", "os": "linux", "config": json.loads(cfg),
            "rootfs": {"type": "layers", "diff_ids": [l["digest"] for l in ls]}}
    man = {"schemaVersion": 2, "mediaType": "application/vnd.oci.image.manifest.v1+json", "layers": ls,
           "config": dict(blob(json.dumps(conf).encode()), mediaType="application/vnd.oci.image.config.v1+json")}
    m = dict(blob(json.dumps(man).encode()), mediaType="application/vnd.oci.image.manifest.v1+json",
             annotations={"org.opencontainers.image.ref.name": "t"})
    open(out + "/index.json", "w").write(json.dumps({"schemaVersion": 2, "manifests": [m]}))
    open(out + "/oci-layout", "w").write('{"imageLayoutVersion": "1.0.0"}')
if sys.argv[1] == "layer": layer(sys.argv[2], sys.argv[3:])
else: layout(sys.argv[2], sys.argv[3], sys.argv[4:])
EOF
oci() { python3 "$TMP/oci.py" "$@"; }
# json FILE EXPR: a Python expression over the JSON document j, printed as JSON
json() { python3 -c "import json,sys; j=json.load(open(sys.argv[1])); print(json.dumps($2))" "$1"; }
names() { ls "$S/names" 2> /dev/null | tr '\n' ' '; }
tmp_left() { ls -A "$S/tmp" 2> /dev/null | tr '\n' ' '; }
# clean NAME [RC]: the last command failed (with RC, 125 by default) in one line of ours, leaving
# no work and no name
clean() {
	if [ "$rc" -eq "${2:-125}" ] && [ "$(grep -c '^bulkhead image' "$TMP/err")" -eq 1 ] &&
		[ -z "$(tmp_left)" ] && [ "$(names)" = "$names_before" ]; then
		ok "$1: refused in one line, nothing left"
	else
		not_ok "$1: refused in one line, nothing left" "rc=$rc tmp: $(tmp_left)" \
			"names: $(names) (before: $names_before)" "$(tail -n 3 "$TMP/err")"
	fi
	names_before=$(names)
}
names_before=""
nodev() { [ -z "$(find "$1" \( -type c -o -type b \) -print)" ]; }

# --- the test image: busybox, a passwd, two layers (a whiteout, device nodes) -----------------
R=$TMP/r1
mkdir -p "$R/bin" "$R/etc" "$R/home/app"
cp "$(command -v busybox)" "$R/bin/busybox"
ln -s busybox "$R/bin/sh" && ln "$R/bin/busybox" "$R/bin/hardlinked"
echo gone > "$R/etc/old"
printf 'root:x:0:0:root:/root:/bin/sh\napp:x:1000:1000::/home/app:/bin/sh\n' > "$R/etc/passwd"
printf 'root:x:0:\napp:x:1000:\nextra:x:2000:app\n' > "$R/etc/group"
tar --numeric-owner --owner=0 --group=0 -C "$R" -cf "$TMP/l1.tar" .
oci layer "$TMP/l2.tar" w:etc/.wh.old f:etc/new c:dev/mem:1:1 b:dev/sda:8:0
CONFIG='{"Env":["FOO=bar baz","PATH=/opt/bin:/bin"],"WorkingDir":"/home/app","User":"app","Cmd":["/bin/sh","-c","echo hi"]}'
oci layout "$TMP/lay" "$CONFIG" "$TMP/l1.tar" "$TMP/l2.tar"
skopeo copy -q oci:"$TMP/lay":t docker-archive:"$TMP/docker.tar":bulkhead-test:t 2> "$TMP/err" &&
	skopeo copy -q oci:"$TMP/lay":t oci-archive:"$TMP/oci.tar":t 2>> "$TMP/err" ||
	not_ok "skopeo makes the test archives" "$(cat "$TMP/err")"

# check_image NAME KIND: the imported image as made above
check_image() {
	imgdir=$S/names/$1
	j=$imgdir/image.json
	check_eq "$2: image.json's env is the image's (PATH its own, HOME from its passwd)" \
		'["PATH=/opt/bin:/bin", "FOO=bar baz", "HOME=/home/app"]' "$(json "$j" "j['config']['env']")"
	check_eq "$2: cwd, user, groups and command from the OCI config" \
		'["/home/app", 1000, 1000, [2000], ["/bin/sh", "-c", "echo hi"]]' \
		"$(json "$j" "[j['config'][k] for k in ('cwd', 'uid', 'gid', 'gids', 'cmd')]")"
	[ ! -e "$imgdir/rootfs/etc/old" ] && [ -f "$imgdir/rootfs/etc/new" ] && [ -x "$imgdir/rootfs/bin/busybox" ] &&
		ok "$2: the whiteout removed etc/old; the rest is there" ||
		not_ok "$2: the whiteout removed etc/old; the rest is there" "$(ls -la "$imgdir/rootfs/etc")"
	check_eq "$2: the hard link is kept" "$(stat -c %i "$imgdir/rootfs/bin/busybox")" \
		"$(stat -c %i "$imgdir/rootfs/bin/hardlinked")"
	nodev "$imgdir/rootfs" && [ -d "$imgdir/rootfs/dev" ] && ok "$2: no device node reached the root" ||
		not_ok "$2: no device node reached the root" "$(find "$imgdir/rootfs/dev" -ls)"
}

# --- imports -------------------------------------------------------------------------------
run_capture image import lay "$TMP/lay"
check_eq "import of an OCI layout directory exits 0" 0 "$rc"
grep -qE '^imported lay: [0-9.]+ MiB in [0-9.]+ s, sha256:[0-9a-f]{64}$' "$TMP/out" &&
	ok "import prints its one-line summary" || not_ok "import prints its one-line summary" "$(cat "$TMP/out")"
check_eq "names/lay is a link into sha256/" "\"../sha256/$(json "$S/names/lay/image.json" "j['digest'][7:]" | tr -d '"')\"" \
	"\"$(readlink "$S/names/lay")\""
check_image lay "OCI layout"
run_capture image import dock "$TMP/docker.tar"
check_eq "import of a docker-archive exits 0" 0 "$rc"
check_image dock "docker-archive"
check_eq "source names the transport read from the content" "\"docker-archive:$TMP/docker.tar\"" \
	"$(json "$S/names/dock/image.json" "j['source']")"
cp "$TMP/oci.tar" "$TMP/archive-named.json" # the name says nothing: the content decides
run_capture image import ociar "$TMP/archive-named.json"
check_eq "import of an OCI archive (whatever its file name) exits 0" 0 "$rc"
check_image ociar "OCI archive"
run_capture image import again "$TMP/lay"
grep -q '(already in the store)' "$TMP/out" && [ "$(readlink "$S/names/again")" = "$(readlink "$S/names/lay")" ] &&
	ok "the same image again: one copy, two names" || not_ok "the same image again: one copy, two names" "$(cat "$TMP/out")"
check_eq "tmp/ is empty after imports" "" "$(tmp_left)"

# An image that says little: PATH and HOME filled in, no command, not umoci's TERM.
oci layout "$TMP/lay2" '{"User":"4242"}' "$TMP/l1.tar"
run_capture image import bare "$TMP/lay2"
check_eq "an image without Env, Cmd, WorkingDir: default PATH, HOME /, no command, cwd /" \
	'[["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/"], [], "/", 4242]' \
	"$(json "$S/names/bare/image.json" "[j['config'][k] for k in ('env', 'cmd', 'cwd', 'uid')]")"

# --- ls, rm --------------------------------------------------------------------------------
run_capture image ls
check_eq "ls lists every name with its short digest" "again bare dock lay ociar" \
	"$(awk 'NR > 1 { print $1 }' "$TMP/out" | tr '\n' ' ' | sed 's/ $//')"
run_capture image ls --json
check_eq "ls --json: name, digest, size, created, source for each" \
	'[5, ["created", "digest", "name", "size", "source"]]' \
	"$(json "$TMP/out" "[len(j), sorted(set(k for o in j for k in o))]")"
ln -s ../sha256/$(printf '%064d' 0) "$S/names/broken"
run_capture image ls
grep -q '^broken  *damaged: sha256/0*: No such file or directory' "$TMP/out" &&
	ok "ls shows a damaged image as damaged, and lists the rest" || not_ok "ls shows a damaged image as damaged" "$(cat "$TMP/out")"
run_capture image rm broken
check_eq "rm removes a damaged name" "0 no" "$rc $([ -L "$S/names/broken" ] && echo yes || echo no)"
dig=$(readlink "$S/names/lay")
run_capture image rm lay
[ "$rc" -eq 0 ] && [ ! -e "$S/names/lay" ] && [ -d "$S/sha256/${dig#../sha256/}" ] &&
	ok "rm of a name whose image has another name keeps the image" ||
	not_ok "rm of a name whose image has another name keeps the image" "$(cat "$TMP/err")"
# Other names may share that digest too (skopeo's gzip makes ociar's the same): remove all.
for n in again $(cd "$S/names" && for n in *; do [ "$(readlink "$n")" = "$dig" ] && [ "$n" != again ] && echo "$n"; done); do
	[ -d "$S/sha256/${dig#../sha256/}" ] || not_ok "rm removed the image while $n still named it"
	run_capture image rm "$n"
done
[ "$rc" -eq 0 ] && [ ! -e "$S/sha256/${dig#../sha256/}" ] && [ -z "$(tmp_left)" ] &&
	ok "rm of its last name removes the image" || not_ok "rm of its last name removes the image" "$(cat "$TMP/err")"
names_before=$(names)
run_capture image rm nosuch
clean "rm of an unknown image"
grep -q "no image named 'nosuch'" "$TMP/err" && ok "rm says the name is unknown" ||
	not_ok "rm says the name is unknown" "$(cat "$TMP/err")"

# --- bad names -----------------------------------------------------------------------------
long=$(printf '%065d' 0)
for n in ../x "" "$long" -x .hidden 'a/b' 'a b'; do
	run_capture image import "$n" "$TMP/lay"
	[ "$rc" -eq 125 ] && [ "$(names)" = "$names_before" ] && [ ! -e "$TMP/x" ] &&
		ok "the name '$n' is refused" || not_ok "the name '$n' is refused" "rc=$rc $(cat "$TMP/err")"
done

# --- corrupt and truncated input -----------------------------------------------------------
head -c 100000 /dev/urandom > "$TMP/random.bin"
run_capture image import bad "$TMP/random.bin"
clean "random bytes"
head -c $(($(stat -c %s "$TMP/docker.tar") / 2)) "$TMP/docker.tar" > "$TMP/half.tar"
run_capture image import bad "$TMP/half.tar"
clean "a truncated docker-archive"
grep -q 'not a complete tar archive' "$TMP/err" && ok "a truncated archive is named so" ||
	not_ok "a truncated archive is named so" "$(cat "$TMP/err")"
tar -C "$R" -cf "$TMP/plain.tar" etc
run_capture image import bad "$TMP/plain.tar"
clean "a tar that is no image"
cp -r "$TMP/lay" "$TMP/laybad"
big=$(ls -S "$TMP/laybad/blobs/sha256" | head -n 1)
printf 'X' | dd of="$TMP/laybad/blobs/sha256/$big" bs=1 seek=5000 conv=notrunc 2> /dev/null
run_capture image import bad "$TMP/laybad"
clean "a layout whose layer does not match its digest"
run_capture image import bad "$TMP/r1"
clean "a directory that is no layout"

# --- hostile layers and archives: nothing written outside, no half image -------------------
# escape NAME LAYER-ENTRIES...: whatever the tools make of it, nothing lands in $H
escape() {
	what=$1
	shift
	oci layer "$TMP/evil.tar" "$@"
	rm -rf "$TMP/evil" && oci layout "$TMP/evil" '{}' "$TMP/l1.tar" "$TMP/evil.tar"
	run_capture image import evil "$TMP/evil"
	left=$(ls -A "$H" | grep -v '^hostfile$')
	if [ -n "$left" ] || [ "$(cat "$H/hostfile")" != host ] || [ "$(stat -c %h "$H/hostfile")" -ne 1 ]; then
		not_ok "$what: nothing outside the root" "$(ls -la "$H")"
	elif [ "$rc" -eq 0 ]; then
		[ -f "$S/names/evil/image.json" ] && ok "$what: contained in the root (umoci), image whole" ||
			not_ok "$what: contained" "no image.json"
		"$BULKHEAD" image rm evil > /dev/null
	else
		clean "$what"
	fi
	names_before=$(names)
}
up=../../../../../../../../../..
escape "a layer with ../ and absolute paths" "f:$up$H/esc-dotdot" "f:$H/esc-abs"
escape "a layer with a symbolic link to / then a file through it" "s:evil:/" "f:evil$H/esc-sym"
escape "a layer with a relative link out and a file through it" "s:evil2:$up$H" "f:evil2/esc-sym2"
escape "a layer with hard links to a host file" "h:hl-abs:$H/hostfile" "h:hl-up:$up$H/hostfile"
python3 - "$TMP/lay" "$TMP/evil-outer.tar" "$H" << 'EOF'
import io, os, sys, tarfile
src, out, h = sys.argv[1:]
t = tarfile.open(out, "w")
for root, _, files in os.walk(src):
    for f in files:
        t.add(os.path.join(root, f), os.path.relpath(os.path.join(root, f), src))
for name in ["../../../../../../../.." + h + "/esc-outer", h + "/esc-outer-abs"]:
    i = tarfile.TarInfo(name); i.size = 1; t.addfile(i, io.BytesIO(b"x"))
t.close()
EOF
run_capture image import evil "$TMP/evil-outer.tar"
[ -z "$(ls -A "$H" | grep -v '^hostfile$')" ] && ok "an OCI archive with paths out of it: nothing outside" ||
	not_ok "an OCI archive with paths out of it: nothing outside" "$(ls -la "$H")"
clean "an OCI archive with paths out of it"

# --- stale work directories: owned by whoever holds .lock --------------------------------
mkdir -p "$S/tmp/import-dead" "$S/tmp/import-live" "$S/tmp/build-young" "$S/tmp/build-old"
: > "$S/tmp/import-dead/.lock" && : > "$S/tmp/import-live/.lock"
touch -d '2 hours ago' "$S/tmp/build-old"
# A process holding the lock, as a live build's tools do (the sleep itself holds descriptor 9).
sh -c 'exec 9> "$1"; flock 9; exec sleep 60' sh "$S/tmp/import-live/.lock" > /dev/null 2>&1 &
holder=$!
pids="$pids $holder"
while flock -n "$S/tmp/import-live/.lock" true; do sleep 0.05; done
run_capture image import swept "$TMP/lay"
check_eq "the next import removes work whose owner is gone, or that is old and unowned" \
	"build-young import-live" "$(tmp_left | sed 's/ $//')"
kill "$holder"
rm -rf "$S/tmp/build-young" "$S/tmp/import-live"

# --- a full disk -------------------------------------------------------------------------
if [ "$(id -u)" -ne 0 ]; then
	skip "a full disk" "needs root to mount a small tmpfs"
else
	mkdir -p "$TMP/small"
	mount -t tmpfs -o size=20m tmpfs "$TMP/small"
	for mib in 24 12; do # too big to copy; copied but too big to unpack as well
		mkdir -p "$TMP/big$mib" && head -c $((mib << 20)) /dev/urandom > "$TMP/big$mib/blob"
		tar -C "$TMP/big$mib" -cf "$TMP/big$mib.tar" blob
		oci layout "$TMP/lbig$mib" '{}' "$TMP/l1.tar" "$TMP/big$mib.tar"
		names_before="" S=$TMP/small/images BULKHEAD_CACHE=$TMP/small
		run_capture image import big "$TMP/lbig$mib"
		clean "a $mib MiB layer into a 20 MiB store"
		grep -qiE 'no space left on device|MiB free' "$TMP/err" && ok "the error says the store is full" ||
			not_ok "the error says the store is full" "$(tail -n 1 "$TMP/err")"
	done
	check_eq "the full store holds no image" "" "$(ls -A "$S/sha256")"
	umount "$TMP/small"
	S=$TMP/cache/images BULKHEAD_CACHE=$TMP/cache
fi
names_before=$(names)

# --- build: refused before anything runs, or in seconds, or stopped half-way; a real one ------
run_capture image build b --packages 'busybox,Bad!'
clean "a bad package name"
run_capture image build b --suite nosuchsuite
clean "a suite the apt sources do not name"
if [ "$(id -u)" -ne 0 ] || ! command -v mmdebstrap > /dev/null; then
	skip "image build" "needs root and mmdebstrap"
else
	start=$(date +%s)
	run_capture image build b --packages busybox,bulkhead-no-such-package
	clean "a package that does not exist"
	if grep -q "Unable to locate package bulkhead-no-such-package" "$TMP/err"; then
		ok "it is named, after apt's own look-up ($(($(date +%s) - start)) s), not after minutes of mmdebstrap"
	else
		skip "it is named" "apt could not reach the mirror: $(tail -n 1 "$TMP/err")"
	fi
	# SIGTERM while mmdebstrap works: passed to all its processes; nothing stays behind.
	"$BULKHEAD" image build half --packages busybox > "$TMP/out" 2> "$TMP/err" &
	bpid=$!
	i=0
	while [ $i -lt 600 ] && ! ls -d "$S"/tmp/build-*/mm/mmdebstrap.* > /dev/null 2>&1; do
		sleep 0.1; i=$((i + 1))
	done
	if [ $i -ge 600 ]; then
		kill "$bpid"; wait "$bpid"
		skip "a build stopped half-way" "mmdebstrap did not start within 60 s: $(tail -n 1 "$TMP/err")"
	else
		sleep 2
		kill -TERM "$bpid"
		wait "$bpid"
		rc=$?
		clean "a build stopped half-way (128+15)" 143
		check_eq "no mount and no process of it is left" "0 " \
			"$(grep -c "$S" /proc/mounts) $(pgrep -f "$S" | tr '\n' ' ')"
	fi
	# A real build takes 60-150 s here (most of it dpkg under mmdebstrap): only when asked.
	if [ "${BULKHEAD_TEST_IMAGE_BUILD:-0}" != 1 ]; then
		skip "a real build" "takes 1-3 minutes here; BULKHEAD_TEST_IMAGE_BUILD=1 runs it"
	else
		start=$(date +%s)
		run_capture image build bb --packages busybox
		check_eq "build of minbase + busybox exits 0" 0 "$rc"
		echo "# build: $(cat "$TMP/out") (wall $(($(date +%s) - start)) s)"
		imgdir=$S/names/bb
		[ -x "$imgdir/rootfs/usr/bin/busybox" ] && [ -L "$imgdir/rootfs/bin" ] && ok "the built root has busybox" ||
			not_ok "the built root has busybox" "$(ls "$imgdir/rootfs")"
		nodev "$imgdir/rootfs" && ok "no device node in the built root" || not_ok "no device node in the built root"
		[ -z "$(find "$imgdir/rootfs/usr/share/man" "$imgdir/rootfs/usr/share/doc" -type f ! -name copyright 2> /dev/null)" ] &&
			ok "no docs or man pages but copyright files" || not_ok "no docs or man pages but copyright files"
		check_eq "image.json holds the recipe and the default config" \
			'[{"suite": "bookworm", "packages": ["busybox"]}, ["/bin/sh"], "/", 0, ["PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin", "HOME=/root"]]' \
			"$(json "$imgdir/image.json" "[j['recipe']] + [j['config'][k] for k in ('cmd', 'cwd', 'uid', 'env')]")"
	fi
fi
# A layer that inflates a thousandfold (2 GiB of zeros in 5 MB of gzip; a sparse entry does the
# same): the tools are stopped at the disk budget, not left to fill the host's disk.
mkdir -p "$TMP/bomb/root"
truncate -s 2G "$TMP/bomb/root/big"
umoci init --layout "$TMP/bomb/oci" && umoci new --image "$TMP/bomb/oci:t" &&
	umoci unpack --image "$TMP/bomb/oci:t" "$TMP/bomb/b" > /dev/null &&
	cp --sparse=always "$TMP/bomb/root/big" "$TMP/bomb/b/rootfs/" &&
	umoci repack --image "$TMP/bomb/oci:t" "$TMP/bomb/b" > /dev/null 2>&1
rm -rf "$TMP/bomb/b" "$TMP/bomb/root"
names_before=$(names)
BULKHEAD_IMAGE_MAX_MIB=64 "$BULKHEAD" image import bomb "$TMP/bomb/oci" > "$TMP/out" 2> "$TMP/err" < /dev/null
rc=$?
clean "a layer that inflates past the disk budget (BULKHEAD_IMAGE_MAX_MIB=64)"
grep -q "more than 64 MiB of disk" "$TMP/err" && ok "... and the line says the budget was reached" ||
	not_ok "... and the line says the budget was reached" "$(tail -n 2 "$TMP/err")"
check_eq "tmp/ is empty at the end" "" "$(tmp_left)"
plan_done
