#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Inside L1 (tests/nested/run.sh): sessions started from a template (--template). The first
# makes it (a guest booted to init's wait, saved by bulkhead-vmm into the cache, 0600); the
# next ones restore it. Each restored guest must be its own: different /dev/urandom output,
# a different TLS ClientHello (random and key share) toward the broker, the host's wall
# clock, its own work share; a damaged or other users' template is refused with one line.
. "$(dirname "$0")/../e2e/lib.sh"

if [ ! -e /dev/kvm ]; then
	skip "sessions from templates" "no /dev/kvm (this suite runs inside L1: tests/nested/run.sh)"
	plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run" BULKHEAD_CACHE="$TMP/cache"
T=$BULKHEAD_CACHE/templates

# The first session makes the template, then runs from it. (-v, for the engine's command, does
# not change the template: its kernel is quiet either way.)
mkdir -p "$TMP/w/0"
run_capture run --template -v --work "$TMP/w/0" -e MARK=env-5e2a \
	-- sh -c 'echo made; exit 4'
check_eq "--template, first session: the command's output and exit code" "made 4" \
	"$(cat "$TMP/out") $rc"
n=$(ls "$T"/*.snap 2> /dev/null | wc -l)
check_eq "one template in the cache, mode 0600" "1 600" "$n $(stat -c %a "$T"/*.snap 2> /dev/null)"
grep -q "engine command: '[^']*bulkhead-vmm' '--restore-fd'" "$TMP/err" &&
	ok "the session's VMM restores the template (--restore-fd), jailed" ||
	not_ok "the session's VMM restores the template" "$(grep -m3 'engine command' "$TMP/err")"
if grep -aq "bulkhead.work=rw\|echo made\|env-5e2a\|$TMP/w/0" "$T"/*.snap; then
	not_ok "the template holds no session's data" \
		"$(grep -ao -m3 "bulkhead.work=rw\|echo made\|env-5e2a\|$TMP/w/0" "$T"/*.snap)"
else
	ok "the template holds no session's data (no command, arguments, environment or work path)"
fi

# A broker for the TLS check: the guest's curl speaks TLS to the broker (the session CA).
ECHO=$BUILD/tests/https-echo
if test_pki && [ -x "$ECHO" ]; then
	"$ECHO" --cert "$TMP/up.pem" --key "$TMP/up.key" --log "$TMP/upstream.log" > "$TMP/port" 2> /dev/null &
	EPID=$!
	PORT=$(wait_port "$TMP/port")
	"$BULKHEAD" vault init --vault "$TMP/vault" > /dev/null 2>&1
	printf 'tok-template-secret' | "$BULKHEAD" vault put api --vault "$TMP/vault" > /dev/null 2>&1
	cat > "$TMP/scope.json" << SCOPE
{ "secrets": [ { "name": "api", "inject": { "header": "Authorization", "value": "Bearer {}" },
    "destinations": [ { "scheme": "https", "host": "localhost", "port": $PORT,
                        "allow_addresses": ["127.0.0.1"] } ] } ] }
SCOPE
	broker="--scope $TMP/scope.json --vault $TMP/vault --ca-file $TMP/ca.pem"
else
	broker=
fi

# Twenty sessions from the one template.
bad=0 i=0
: > "$TMP/rand"; : > "$TMP/hello"; : > "$TMP/clock"
while [ $i -lt 20 ]; do
	i=$((i + 1))
	mkdir -p "$TMP/w/$i"
	start=$(date +%s)
	# shellcheck disable=SC2086 # $broker is words
	"$BULKHEAD" run --template --work "$TMP/w/$i" $broker -- sh -c "
		head -c 32 /dev/urandom | od -An -tx1 | tr -d ' \n'; echo
		date +%s
		echo session-$i > mine
		${broker:+curl -s --trace - -o /dev/null https://localhost:$PORT/v1/x | sed -n '/Client hello/,/^=. Recv/p' | grep '^[0-9a-f][0-9a-f][0-9a-f][0-9a-f]:' | head -n 8 | md5sum}
		exit $((i % 7))" > "$TMP/o" 2> "$TMP/e"
	r=$?
	now=$(date +%s)
	if [ "$r" != $((i % 7)) ] || [ "$(cat "$TMP/w/$i/mine" 2> /dev/null)" != "session-$i" ]; then
		bad=$((bad + 1))
		echo "# session $i: exit $r; $(head -c 300 "$TMP/e")"
		continue
	fi
	sed -n 1p "$TMP/o" >> "$TMP/rand"
	t=$(sed -n 2p "$TMP/o")
	echo "$((t - start)) $((now - t))" >> "$TMP/clock"
	[ -z "$broker" ] || sed -n 3p "$TMP/o" >> "$TMP/hello"
done
check_eq "20 sessions from one template: each exit code and work share its own" 0 "$bad"
check_eq "20 different /dev/urandom outputs" 20 "$(sort -u "$TMP/rand" | grep -c '^[0-9a-f]\{64\}$')"
# The guest read its clock while its session ran: between our clock before the run and after
# it (a second either way for rounding), however long the run took. The template's clock
# would be behind by every session restored before.
late=$(awk '$1 < -1 || $2 < -1' "$TMP/clock" | wc -l)
[ "$late" = 0 ] || echo "# guest clock minus run start, run end minus guest clock: $(tr '\n' ',' < "$TMP/clock")"
check_eq "every restored guest has the host's wall clock (read during its run), not the template's" \
	"20 0" "$(wc -l < "$TMP/clock") $late"
if [ -n "$broker" ]; then
	hellos=$(grep -v '^d41d8cd98f00b204e9800998ecf8427e' "$TMP/hello" | sort -u | wc -l)
	[ "$hellos" = 20 ] ||
		echo "# the last session's output: $(head -c 600 "$TMP/o" | tr '\n' '|'); stderr: $(head -c 600 "$TMP/e" | tr '\n' '|')"
	check_eq "20 different TLS ClientHellos (random and key share) toward the broker" 20 "$hellos"
	kill $EPID 2> /dev/null
else
	skip "different TLS ClientHellos toward the broker" "https-echo or openssl missing"
fi
check_eq "still one template: the sessions restored it, none made another" 1 \
	"$(ls "$T"/*.snap | wc -l)"

# Refusals: the QEMU engine; a damaged template; one other users can read.
run_capture run --template --engine qemu -- true
case $rc:$(cat "$TMP/err") in
125:*"--template: the qemu engine cannot restore a template"*) ok "--template with --engine qemu: refused, one line" ;;
*) not_ok "--template with --engine qemu: refused" "rc=$rc" "$(cat "$TMP/err")" ;;
esac
f=$(ls "$T"/*.snap)
cp "$f" "$TMP/good.snap"
printf '\377' | dd of="$f" bs=1 seek=5000 conv=notrunc 2> /dev/null
run_capture run --template --work "$TMP/w/0" -- echo never
if [ "$rc" = 125 ] && [ ! -s "$TMP/out" ] && grep -q "bulkhead-vmm failed.*snapshot" "$TMP/err"; then
	ok "a damaged template: refused with the VMM's line, nothing runs"
else
	not_ok "a damaged template is refused" "rc=$rc out=$(cat "$TMP/out")" "$(cat "$TMP/err")"
fi
cp "$TMP/good.snap" "$f"; chmod 644 "$f"
run_capture run --template --work "$TMP/w/0" -- echo never
if [ "$rc" = 125 ] && [ ! -s "$TMP/out" ] && grep -q "not a template of ours" "$TMP/err"; then
	ok "a template other users can read: refused, nothing runs"
else
	not_ok "a template other users can read is refused" "rc=$rc" "$(cat "$TMP/err")"
fi
chmod 600 "$f"
run_capture run --template --work "$TMP/w/0" -- echo again
check_eq "the template mended: sessions start from it again" "again 0" "$(cat "$TMP/out") $rc"

# bulkhead template ls|rm: the template made above is current, with its shape; rm --stale
# keeps it; rm with a prefix of its name removes it and its shape file; the next session
# makes it again.
name=$(basename "$f" .snap)
"$BULKHEAD" template ls > "$TMP/ls" 2>&1
case $(cat "$TMP/ls") in
"$name "*" MiB, 1 vCPU, work "*current) ok "template ls: the template, its shape (RAM, vCPUs, the work share), current" ;;
*) not_ok "template ls: the template, its shape, current" "$(cat "$TMP/ls")" ;;
esac
"$BULKHEAD" template rm --stale > "$TMP/out" 2>&1
check_eq "template rm --stale keeps a current template" "0 1" "$? $(ls "$T"/*.snap 2> /dev/null | wc -l)"
"$BULKHEAD" template rm "$(echo "$name" | cut -c1-8)" > "$TMP/out" 2>&1
check_eq "template rm PREFIX removes it and its shape file" "0 0" "$? $(ls "$T" | wc -l)"
run_capture run --template --work "$TMP/w/0" -- echo remade
check_eq "the next --template session makes it again" "remade 0 1" \
	"$(cat "$TMP/out") $rc $("$BULKHEAD" template ls | grep -c ' current$')"
f=$(ls "$T"/*.snap)

# bulkhead serve --template: its pool refills by restoring the template (the daemon's sessions
# each have a work directory, the shape made above), and a session taken from it runs. (No
# curl in L1: tests/nested/serve_api.sh.)
. "$(dirname "$0")/serve_api.sh"
serve_up 2 --template
restored=$(pgrep -fc "bulkhead-vmm --restore-fd")
made=$(api POST /v1/sessions '{}')
sid=$(echo "$made" | sed -n 's/.*"id": *"\([0-9a-f]*\)".*/\1/p')
swork=$(echo "$made" | sed -n 's/.*"work": *"\([^"]*\)".*/\1/p')
api POST "/v1/sessions/$sid/exec" '{"cmd":["sh","-c","echo pooled > /work/f"]}' > /dev/null
if [ "$restored" -ge 2 ] && echo "$made" | grep -q '"pooled": *true' &&
	[ "$(cat "$swork/f" 2> /dev/null)" = pooled ] && [ "$(ls "$T"/*.snap | wc -l)" = 1 ]; then
	ok "serve --template: the pool's guests are restored from the template, and one taken runs"
else
	not_ok "serve --template: the pool restores the template" "restored VMMs: $restored" \
		"$(echo "$made" | tail -n 1 | head -c 400)" "$(tail -n 5 "$TMP/serve.log")"
fi
kill "$SPID" 2> /dev/null
wait "$SPID" 2> /dev/null
plan_done
