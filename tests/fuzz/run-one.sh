#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# Runs one libFuzzer binary for a bounded time from its seed corpus; prints TAP.
# A crash, leak or sanitizer report fails the test and leaves the reproducer in
# build/fuzz/artifacts/.
set -u
bin=$1 seconds=$2
name=$(basename "$bin")
seeds=tests/fuzz/corpus/${name#fuzz_}
work=$(dirname "$bin")/corpus/$name
art=$(dirname "$bin")/artifacts/
mkdir -p "$work" "$art"
if "$bin" -max_total_time="$seconds" -artifact_prefix="$art" -print_final_stats=1 \
	"$work" "$seeds" > "$work.log" 2>&1; then
	runs=$(sed -n 's/^stat::number_of_executed_units: *//p' "$work.log")
	echo "ok 1 - $name: ${runs:-?} inputs in ${seconds}s, no crash"
else
	echo "not ok 1 - $name found a bug; reproducer in $art"
	grep -E 'ERROR|SUMMARY|Test unit written' "$work.log" | head -n 5 | sed 's/^/# /'
fi
echo "1..1"
