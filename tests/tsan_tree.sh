#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/tsan_tree.sh FROM TSAN: makes TSAN a whole tree to run suites in: FROM's programs,
# libraries (kernel, initramfs, images) and test tools, hard-linked (no copy), beside the
# ThreadSanitizer build of bulkhead-serve that `make test-tsan` put in TSAN/bin.
set -eu
from=$1 tsan=$2
[ -x "$tsan/bin/bulkhead-serve" ] || { echo "tsan_tree: no $tsan/bin/bulkhead-serve" >&2; exit 1; }
for f in "$from"/bin/*; do
	[ "$(basename "$f")" = bulkhead-serve ] || ln -f "$f" "$tsan/bin/"
done
for d in lib tests; do
	rm -rf "${tsan:?}/$d"
	cp -al "$from/$d" "$tsan/$d"
done
