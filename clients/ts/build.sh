#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# clients/ts/build.sh: builds the TypeScript client and its tests into clients/ts/dist with
# typescript from npm. node_modules is kept outside the tree, in
# ${BULKHEAD_NPM_CACHE:-~/.cache/bulkhead/npm}/<hash of package-lock.json>, and linked in, so
# a second build (another work tree, CI on the same machine) installs nothing.
# Exit 0: built. Exit 77: it cannot be built on this machine (no node or npm, or the npm
# registry cannot be reached and nothing is cached), the reason on stderr. Else: it failed.
set -eu
cd "$(dirname "$0")"
cannot() { echo "$*" >&2; exit 77; }

command -v node > /dev/null || cannot "node is not installed (the TypeScript client needs Node.js 18 or later)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || cannot "node $(node --version) is older than 18"

key=$(sha256sum package-lock.json | cut -c1-16)
base=${BULKHEAD_NPM_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/bulkhead/npm}
cache=$base/$key
if [ ! -f "$cache/node_modules/typescript/bin/tsc" ]; then
	command -v npm > /dev/null || cannot "npm is not installed and $cache holds no node_modules"
	npm ping > /dev/null 2>&1 || cannot "the npm registry cannot be reached (offline?) and $cache holds no node_modules"
	mkdir -p "$base"
	tmp=$(mktemp -d "$cache.XXXXXX")
	cp package.json package-lock.json "$tmp/"
	# --ignore-scripts: nothing from the registry runs; the lock file pins every version.
	if ! (cd "$tmp" && npm ci --ignore-scripts --no-audit --no-fund) > "$tmp.log" 2>&1; then
		echo "npm ci failed:" >&2
		tail -n 20 "$tmp.log" >&2
		rm -rf "$tmp" "$tmp.log"
		exit 1
	fi
	rm -f "$tmp.log"
	# Another build may have filled the same key meanwhile: keep its copy then.
	mv -T "$tmp" "$cache" 2> /dev/null || rm -rf "$tmp"
fi
# A node_modules of its own (someone ran npm install here) is left as it is.
if [ -L node_modules ] || [ ! -e node_modules ]; then
	ln -sfn "$cache/node_modules" node_modules
fi
rm -rf dist
node node_modules/typescript/bin/tsc -p tsconfig.json
