#!/bin/sh
# SPDX-License-Identifier: Apache-2.0
# clients/ts/build.sh: builds the TypeScript client and its tests into clients/ts/dist with
# typescript from npm. node_modules is kept outside the tree (ci/npm-modules.sh: by the lock
# file's hash) and linked in, so a second build installs nothing.
# Exit 0: built. Exit 77: it cannot be built on this machine (no node or npm, or the npm
# registry cannot be reached and nothing is cached), the reason on stderr. Else: it failed.
set -eu
cd "$(dirname "$0")"
cannot() { echo "$*" >&2; exit 77; }

command -v node > /dev/null || cannot "node is not installed (the TypeScript client needs Node.js 18 or later)"
major=$(node -p 'process.versions.node.split(".")[0]')
[ "$major" -ge 18 ] || cannot "node $(node --version) is older than 18"

rc=0
modules=$(sh ../../ci/npm-modules.sh .) || rc=$?
[ $rc -eq 0 ] || exit $rc
# A node_modules of its own (someone ran npm install here) is left as it is.
if [ -L node_modules ] || [ ! -e node_modules ]; then
	ln -sfn "$modules" node_modules
fi
rm -rf dist
node node_modules/typescript/bin/tsc -p tsconfig.json
