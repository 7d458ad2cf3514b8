#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make deps` (every package in ci/packages.txt) and `make build-deps` (`sh ci/deps.sh build`:
# only those tagged build, what compiling needs): installs the missing ones.
# Idempotent and quiet when everything is present (one dpkg-query, no apt-get).
set -eu
list=$(dirname "$0")/packages.txt
want=${1:-all}
case $want in
all | build) ;;
*)
	echo "deps: usage: deps.sh [build]" >&2
	exit 2
	;;
esac
pkgs=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list" |
	awk -v want="$want" '$2 != "build" && $2 != "run" { print "deps: ci/packages.txt: a line without a build or run tag: " $0 > "/dev/stderr"; exit 1 }
		want == "all" || $2 == want { print $1 }')

missing=
for p in $pkgs; do
	st=$(dpkg-query -W -f='${db:Status-Status}' "$p" 2>/dev/null || true)
	[ "$st" = installed ] || missing="$missing $p"
done
[ -z "$missing" ] && exit 0

echo "deps: installing:$missing" >&2
if [ "$(id -u)" -ne 0 ]; then
	echo "deps: missing packages and not root: run 'sudo make deps' (or apt-get install$missing)" >&2
	exit 1
fi
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# shellcheck disable=SC2086 # word splitting of the package list is intended
apt-get install -y -qq --no-install-recommends $missing >/dev/null
