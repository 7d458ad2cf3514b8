#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# lane: host
# tests/e2e/test_broker_stream_epoll.sh: test_broker_stream_scale.sh's checks again, smaller
# (200 SSE streams and 200 WebSockets across 20 sessions), with the broker's epoll backend,
# which waits for a parked answer's hang-up in its own way (io_uring is the default where it
# runs).
EVENT_LOOP=epoll SESSIONS=${SESSIONS:-20} STREAMS=${STREAMS:-200} \
	exec sh "$(dirname "$0")/test_broker_stream_scale.sh"
