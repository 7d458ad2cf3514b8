#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# tests/tools/test_image.sh LABEL PACKAGES: prints the name of a Debian image with PACKAGES
# (comma-separated) in the image store, building it with `bulkhead image build` when the store
# lacks it. The name holds a key of the recipe (suite, packages, this host's apt sources, the
# mmdebstrap version), so a changed recipe builds anew and an unchanged one is reused between
# test runs; older images of the same LABEL are removed. Progress goes to stderr.
set -eu
label=${1:?usage: test_image.sh LABEL PACKAGES}
packages=${2:?usage: test_image.sh LABEL PACKAGES}
BUILD=${BUILD:-build}
bulkhead=$BUILD/bin/bulkhead
key=$( { echo bookworm "$packages"; cat /etc/apt/sources.list /etc/apt/sources.list.d/*.sources \
	/etc/apt/sources.list.d/*.list 2> /dev/null; mmdebstrap --version; } | sha256sum | cut -c1-12)
name=test-$label-$key
names=$("$bulkhead" image ls --json |
	python3 -c 'import json, sys; print("\n".join(i["name"] for i in json.load(sys.stdin)))')
for old in $names; do
	case $old in
	"$name") echo "$name"; exit 0 ;;
	test-"$label"-*) "$bulkhead" image rm "$old" >&2 || true ;;
	esac
done
"$bulkhead" image build "$name" --suite bookworm --packages "$packages" >&2
echo "$name"
