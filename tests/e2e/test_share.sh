#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: the work share (`--work DIR[:ro]`): virtio-fs through a per-session
# virtiofsd, byte-exact both ways, host-enforced read-only, no escape from DIR,
# files owned by DIR's owner, and nothing left behind.
. "$(dirname "$0")/lib.sh"

if [ ! -x /usr/lib/qemu/virtiofsd ]; then
	skip "share suite" "/usr/lib/qemu/virtiofsd not installed (run make deps)"; plan_done; exit 0
fi
if [ "$(id -u)" -ne 0 ] && ! unshare -U true 2>/dev/null; then
	skip "share suite" "needs root or unprivileged user namespaces for virtiofsd"; plan_done; exit 0
fi

export BULKHEAD_RUNDIR="$TMP/run"
top=$TMP/top
work=$top/work
mkdir -p "$work" "$top/outside"
echo "secret outside the share" > "$top/outside/marker"
outside_before=$(ls -laR --time-style=+%s "$top/outside" | sha256sum)

# --- both directions, byte-exact ---------------------------------------------
head -c 300000 /dev/urandom > "$work/from-host"
run_capture run --work "$work" -- sh -c 'pwd; sha256sum from-host; head -c 200000 /dev/urandom > from-guest; sha256sum from-guest'
check_eq "the command starts in /work" "/work" "$(sed -n 1p "$TMP/out")"
check_eq "the guest reads the host's file byte-exact" \
	"$(sha256sum < "$work/from-host" | cut -d' ' -f1)" "$(sed -n 2p "$TMP/out" | cut -d' ' -f1)"
check_eq "the host reads the guest's file byte-exact" \
	"$(sed -n 3p "$TMP/out" | cut -d' ' -f1)" "$(sha256sum < "$work/from-guest" | cut -d' ' -f1)"

# --- namespace operations ------------------------------------------------------
echo before > "$work/to-rename"
echo doomed > "$work/to-delete"
run_capture run --work "$work" -- sh -c 'mv to-rename renamed && rm to-delete && mkdir -p d/e &&
	echo deep > d/e/f && ln -s d/e/f link && cat link'
check_eq "create, rename, delete, mkdir, symlink: guest sees them" "deep" "$(cat "$TMP/out")"
[ -f "$work/renamed" ] && [ ! -e "$work/to-rename" ] && [ ! -e "$work/to-delete" ] &&
	[ "$(cat "$work/d/e/f")" = deep ] && [ "$(readlink "$work/link")" = d/e/f ] &&
	ok "create, rename, delete, mkdir, symlink: host sees them" ||
	not_ok "create, rename, delete, mkdir, symlink: host sees them" "$(ls -laR "$work")"

# --- size and count --------------------------------------------------------------
head -c 104857600 /dev/urandom > "$work/big"
run_capture run --work "$work" -- sh -c 'cp big big.copy && sha256sum big.copy'
want=$(sha256sum < "$work/big" | cut -d' ' -f1)
if [ "$rc" = 0 ] && [ "$(cut -d' ' -f1 < "$TMP/out")" = "$want" ] &&
	[ "$(sha256sum < "$work/big.copy" | cut -d' ' -f1)" = "$want" ]; then
	ok "a 100 MiB file round-trips with a matching SHA-256"
else
	not_ok "a 100 MiB file round-trips with a matching SHA-256" "rc=$rc" "$(cat "$TMP/err")"
fi
rm -f "$work/big" "$work/big.copy"

run_capture run --work "$work" -- sh -c 'mkdir many && cd many && i=0;
	while [ $i -lt 2000 ]; do echo $i > f$i; i=$((i+1)); done; ls | wc -l'
n=$(find "$work/many" -type f | wc -l)
if [ "$n" = 2000 ] && [ "$(cat "$work/many/f1999")" = 1999 ] && [ "$(tr -d ' ' < "$TMP/out")" = 2000 ]; then
	ok "2,000 small files created in the guest are all on the host"
else
	not_ok "2,000 small files created in the guest are all on the host" "host sees $n" "$(cat "$TMP/err")"
fi

# --- ownership ----------------------------------------------------------------------
if [ "$(id -u)" -eq 0 ]; then
	# The owner must be able to reach DIR: make the test's parent traversable.
	chmod 755 "$TMP"
	own=$TMP/owned
	mkdir "$own" && chown 4321:4322 "$own"
	run_capture run --work "$own" -- sh -c 'echo hi > new && mkdir newdir'
	check_eq "as root, guest-created files belong to DIR's owner" "4321:4322 4321:4322" \
		"$(stat -c %u:%g "$own/new") $(stat -c %u:%g "$own/newdir")"
else
	skip "ownership mapping" "runs only as root (bulkhead acting for a user)"
fi

# --- read-only, enforced by the host ----------------------------------------------
ro=$TMP/ro
mkdir "$ro" && echo keep > "$ro/file" && mkdir "$ro/sub"
ro_before=$(ls -laR --time-style=+%s "$ro" | sha256sum)
run_capture run --work "$ro:ro" -- sh -c 'cat file
	for op in "echo x > new" "echo x >> file" "rm file" "mkdir d" "mv file f2" "touch file" "rmdir sub" "ln -s file l"; do
		if sh -c "$op" 2>/dev/null; then echo "WROTE: $op"; fi
	done
	mount -o remount,rw /work 2>/dev/null
	if echo x > after-remount 2>/dev/null; then echo "WROTE after remount"; fi
	sh -c "echo x > new" 2>&1 | grep -c -E "Read-only|Permission denied"'
check_eq ":ro: reads work" "keep" "$(sed -n 1p "$TMP/out")"
if grep -q WROTE "$TMP/out"; then not_ok ":ro: every write fails" "$(grep WROTE "$TMP/out")"; else ok ":ro: every write fails"; fi
check_eq ":ro: writes fail with EROFS/EACCES" 1 "$(sed -n 2p "$TMP/out")"
check_eq ":ro: the host directory is unchanged, even after a guest remount" "$ro_before" \
	"$(ls -laR --time-style=+%s "$ro" | sha256sum)"

# --- no escape ---------------------------------------------------------------------
ln -s /etc/shadow "$work/shadow"
ln -s .. "$work/up"
ln -s ../outside/marker "$work/marker-link"
run_capture run --work "$work" -- sh -c 'cat shadow marker-link up/outside/marker 2>/dev/null; ls up/ | head -n 50'
if grep -q -e 'root:' -e 'secret outside' "$TMP/out"; then
	not_ok "symlinks to /etc/shadow or .. do not leave the share" "$(head -c 300 "$TMP/out")"
else
	ok "symlinks to /etc/shadow or .. do not leave the share"
fi
check_eq "nothing outside DIR changed" "$outside_before" "$(ls -laR --time-style=+%s "$top/outside" | sha256sum)"

# --- lifecycle ---------------------------------------------------------------------
check_eq "no session directory or socket is left" "" "$(ls -A "$BULKHEAD_RUNDIR")"
left=$(pgrep -f "virtiofsd.*source=$TMP" | wc -l)
check_eq "no virtiofsd is left" 0 "$left"

"$BULKHEAD" run --work "$work" -- sleep 100 > /dev/null 2> "$TMP/err" &
pid=$!
vm=$(vm_pid)
i=0
while [ $i -lt 100 ] && ! pgrep -f "virtiofsd.*source=$work" > /dev/null; do sleep 0.1; i=$((i + 1)); done
sleep 1
pkill -KILL -f "virtiofsd.*source=$work"
wait "$pid"
rc=$?
if [ "$rc" = 125 ] && grep -q 'virtiofsd stopped' "$TMP/err"; then
	ok "virtiofsd dying mid-session ends the session with 125 and says so"
else
	not_ok "virtiofsd dying mid-session ends the session with 125 and says so" "rc=$rc" "$(cat "$TMP/err")"
fi
sleep 0.2
if [ -n "$vm" ] && ! kill -0 "$vm" 2> /dev/null; then
	ok "no VM is left after virtiofsd died (pid $vm, seen while it ran)"
else
	not_ok "no VM is left after virtiofsd died" "pid '$vm'"
fi

# The guest's root may not leave set-user-ID or set-group-ID programs on the host: virtiofsd
# writes as the share's owner, and such a file would run as that owner for anyone.
mkdir -p "$TMP/setid"
run_capture run --work "$TMP/setid" -- sh -c '
	echo x > f; cp /bin/busybox /tmp/s; chmod 6755 /tmp/s
	chmod 4755 f 2> /dev/null; echo "suid=$?"
	chmod g+s f 2> /dev/null; echo "sgid=$?"
	cp -p /tmp/s /work/copied 2> /dev/null; echo "create=$?"
	mkdir -m 2775 d 2> /dev/null; echo "mkdir=$?"
	chmod 700 f; echo "plain=$?"'
check_eq "the guest cannot set the set-user-ID or set-group-ID bit in its share" \
	"suid=1 sgid=1 create=1 mkdir=1 plain=0" "$(tr '\n' ' ' < "$TMP/out" | sed 's/ $//')"
check_eq "... and the host holds no such file" "" "$(find "$TMP/setid" -perm /6000)"
check_eq "... while ordinary modes still work" "700" "$(stat -c %a "$TMP/setid/f")"
# Nor files every host user may write: another user could then change what the owner runs
# (a git hook, a script). Ordinary creation under the usual umask is untouched.
mkdir -p "$TMP/wother"
run_capture run --work "$TMP/wother" -- sh -c '
	echo x > f; mkdir d; git init -q g; echo "made=$?"
	chmod 777 d 2> /dev/null; echo "dir=$?"
	chmod o+w f 2> /dev/null; echo "file=$?"
	chmod 1777 g/.git/objects 2> /dev/null; echo "sticky=$?"
	(umask 0; echo y > u) 2> /dev/null; echo "umask0=$?"
	chmod 775 d; echo "group=$?"'
check_eq "the guest cannot make a file or directory of its share writable by every host user" \
	"made=0 dir=1 file=1 sticky=1 umask0=1 group=0" "$(tr '\n' ' ' < "$TMP/out" | sed 's/ $//')"
check_eq "... and the host holds no such file" "" "$(find "$TMP/wother" -perm -o+w)"

# A share's path may not go through a symbolic link: a guest that planted one in its share
# cannot redirect a later session that shares a directory below it.
mkdir -p "$TMP/job/out" "$TMP/elsewhere" && echo private > "$TMP/elsewhere/f"
run_capture run --work "$TMP/job" -- sh -c 'rm -r /work/out && ln -s '"$TMP/elsewhere"' /work/out'
run_capture run --work "$TMP/job/out" -- sh -c 'cat /work/f; echo planted > /work/g'
if [ "$rc" = 125 ] && grep -q "symbolic link" "$TMP/err" && [ ! -e "$TMP/elsewhere/g" ]; then
	ok "a --work path through a link a guest planted is refused, naming why"
else
	not_ok "a --work path through a planted link is refused" "rc=$rc" "$(cat "$TMP/err" "$TMP/out")"
fi

# Nothing mounted below a share is shared with it, rw as ro (a forbidden directory mounted
# inside an allowed share would otherwise reach the guest): such a share is refused.
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$TMP/mshare/sub" "$TMP/mounted" && echo under > "$TMP/mounted/f"
	mount --bind "$TMP/mounted" "$TMP/mshare/sub"
	run_capture run --work "$TMP/mshare" -- sh -c 'ls -A /work/sub; echo done'
	umount "$TMP/mshare/sub"
	if [ "$rc" = 125 ] && grep -q "is a mount point inside it" "$TMP/err" && [ ! -s "$TMP/out" ]; then
		ok "a share with a mount below it is refused, naming the mount"
	else
		not_ok "a share with a mount below it is refused" "rc=$rc" "$(cat "$TMP/err" "$TMP/out")"
	fi
fi

one_line_125() { # NAME ARGS...
	name=$1; shift
	run_capture "$@"
	if [ "$rc" = 125 ] && [ "$(wc -l < "$TMP/err")" = 1 ]; then ok "$name: 125 and one line"
	else not_ok "$name: 125 and one line" "rc=$rc" "$(cat "$TMP/err")"; fi
}
one_line_125 "--work of a missing directory" run --work "$TMP/nope" -- true
one_line_125 "--work of a file" run --work "$work/from-host" -- true
if [ "$(id -u)" -eq 0 ]; then
	mkdir -p "$TMP/closed/inner" && chmod 700 "$TMP/closed" && chown 4321 "$TMP/closed/inner"
	one_line_125 "--work its owner cannot reach" run --work "$TMP/closed/inner" -- true
	grep -q "cannot open" "$TMP/err" && ok "... and the line says why" || not_ok "... and the line says why" "$(cat "$TMP/err")"
fi

plan_done
