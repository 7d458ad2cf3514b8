#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# A guest /init that boots and never calls home (tests/e2e/test_hostile_guest.sh): the
# session must still end, by --boot-timeout, and an interrupted `bulkhead start` must leave
# nothing running.
exec /bin/sleep 1000000
