#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# End to end: the README's platform example is true. Its Python program (the block after the
# "platform-example" marker) runs against a real `bulkhead serve` with a pool of the Python
# test image (tests/tools/test_image.sh, the README's "py"), through clients/python, and
# prints exactly what the README shows; its session came from the pool, bound to its scope.
. "$(dirname "$0")/lib.sh"

require "the README's platform example" "$BIN/bulkhead-serve" mmdebstrap python3
if [ "$(id -u)" -ne 0 ]; then
	skip "the README's platform example" "needs root (sessions on an image)"; plan_done; exit 0
fi
export BULKHEAD_RUNDIR="$TMP/run"
if ! PY=$(sh tests/tools/test_image.sh py python3,python3-requests,python3-pip); then
	not_ok "the Python test image is built (bulkhead image build)"; plan_done; exit 1
fi
# The program, with the test image's name for "py"; the output the README shows after it.
awk '/<!-- platform-example/ { on = 1; next } on && /^```python/ { p = 1; next }
	p && /^```/ { exit } p' README.md | sed "s/image=\"py\"/image=\"$PY\"/" > "$TMP/example.py"
awk '/<!-- platform-example/ { on = 1; next } on && /^\$ PYTHONPATH/ { p = 1; next }
	p && /^```/ { exit } p' README.md > "$TMP/want"
if [ ! -s "$TMP/example.py" ] || [ ! -s "$TMP/want" ]; then
	not_ok "the README holds the example and its output"; plan_done; exit 1
fi
"$BULKHEAD" serve --socket "$TMP/s.sock" --state "$TMP/state" --pool "1:$PY" 2> "$TMP/serve.log" &
pids="$pids $!"
_i=0
while ! curl -s --unix-socket "$TMP/s.sock" http://serve/v1/pool 2> /dev/null | grep -q '"ready":1' && [ $_i -lt 900 ]; do
	sleep 0.2; _i=$((_i + 1))
done
( curl -s -N -m 120 --unix-socket "$TMP/s.sock" "http://serve/v1/events" > "$TMP/events" ) &
evpid=$!
sleep 0.5
BULKHEAD_SOCKET="$TMP/s.sock" PYTHONPATH=clients/python python3 "$TMP/example.py" > "$TMP/out" 2> "$TMP/err"
rc=$?
kill "$evpid" 2> /dev/null
if [ "$rc" = 0 ] && cmp -s "$TMP/want" "$TMP/out"; then
	ok "the README's program prints what the README shows"
else
	not_ok "the README's program prints what the README shows" "rc=$rc" "$(cat "$TMP/out" "$TMP/err" | head -n 10)" "$(tail -n 3 "$TMP/serve.log")"
fi
if grep -q '"pooled":true,"type":"session.started"' "$TMP/events" &&
	grep -q '"type":"session.bound".*"broker":"private"\|"broker":"private".*"type":"session.bound"' "$TMP/events"; then
	ok "its session came from the pool, bound to its scope"
else
	not_ok "its session came from the pool, bound to its scope" "$(head -c 600 "$TMP/events")"
fi
plan_done
