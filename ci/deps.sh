#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# `make deps`: installs the Debian packages in ci/packages.txt that are missing.
# Idempotent and quiet when everything is present (one dpkg-query, no apt-get).
set -eu
list=$(dirname "$0")/packages.txt
pkgs=$(sed -e 's/#.*//' -e '/^[[:space:]]*$/d' "$list" | awk '{print $1}')

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
