#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# ci/npm-modules.sh DIR: prints the path of a node_modules for DIR's package-lock.json, kept
# outside the tree in ${BULKHEAD_NPM_CACHE:-~/.cache/bulkhead/npm}/<hash of the lock file>,
# installed with `npm ci` the first time, so a second use (another work tree, CI on the same
# machine) installs nothing. Used by clients/ts/build.sh and the Node test clients.
# Exit 0: printed. Exit 77: it cannot be had on this machine (no npm, or the npm registry
# cannot be reached and nothing is cached), the reason on stderr. Else: it failed.
set -eu
dir=${1:?usage: ci/npm-modules.sh DIR}
cannot() { echo "$*" >&2; exit 77; }
[ -f "$dir/package-lock.json" ] || { echo "$dir has no package-lock.json" >&2; exit 1; }
key=$(sha256sum "$dir/package-lock.json" | cut -c1-16)
base=${BULKHEAD_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead/npm}
cache=$base/$key
if [ ! -f "$cache/.complete" ]; then
	command -v npm > /dev/null || cannot "npm is not installed and $cache holds no node_modules"
	npm ping > /dev/null 2>&1 || cannot "the npm registry cannot be reached (offline?) and $cache holds no node_modules"
	mkdir -p "$base"
	tmp=$(mktemp -d "$cache.XXXXXX")
	cp "$dir/package.json" "$dir/package-lock.json" "$tmp/"
	# --ignore-scripts: nothing from the registry runs; the lock file pins every version.
	if ! (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund) > "$tmp.log" 2>&1; then
		echo "npm ci failed:" >&2
		tail -n 20 "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		exit 1
	fi
	rm -f "$tmp.log"
	: > "$tmp/.complete"
	# Another build may have filled the same key meanwhile: keep its copy then.
	rm -rf "$cache" 2> /dev/null || :
	mv -T "$tmp" "$cache" 2> /dev/null || rm -rf "$tmp"
fi
echo "$cache/node_modules"
