#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# bench/broker-streams.sh: what long-lived streams cost a shared broker. Runs the e2e suite
# tests/e2e/test_broker_stream_scale.sh at the size asked (SSE streams and WebSockets, each
# with a CONNECT tunnel, TLS both ways and an injected token, spread over SESSIONS sessions)
# and prints its measurements: the broker's threads and RSS before and with every stream
# open and quiet, per open stream, and the threads' peak while a round from the upstream
# wakes every stream at once. Measured, never asserted (the suite's own checks still run).
# Usage: SESSIONS=100 STREAMS=1000 bench/broker-streams.sh   (STREAMS: of each kind)
set -eu
BUILD=${BUILD:-build}
SESSIONS=${SESSIONS:-100}
STREAMS=${STREAMS:-1000}
case $SESSIONS$STREAMS in *[!0-9]*) echo "broker-streams: SESSIONS and STREAMS are numbers" >&2; exit 1 ;; esac
[ "$SESSIONS" -ge 1 ] && [ "$STREAMS" -ge "$SESSIONS" ] ||
	{ echo "broker-streams: STREAMS ($STREAMS) must be at least SESSIONS ($SESSIONS) >= 1" >&2; exit 1; }
out=$(BUILD=$BUILD SESSIONS=$SESSIONS STREAMS=$STREAMS sh tests/e2e/test_broker_stream_scale.sh 2>&1) ||
	{ printf '%s\n' "$out" >&2; exit 1; }
echo "broker streams: $STREAMS SSE streams and $STREAMS WebSockets across $SESSIONS sessions" \
	"($(nproc) CPUs)"
printf '%s\n' "$out" | sed -n 's/^# /  /p'
printf '%s\n' "$out" | grep '^not ok' || echo "  (every check of the suite passed)"
