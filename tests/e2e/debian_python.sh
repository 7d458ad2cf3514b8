# SPDX-License-Identifier: Apache-2.0
# tests/e2e/debian_python.sh: sourced by tests/e2e/lib.sh and bench/lib.sh (POSIX sh).
# debian_python MODULE...: $PY becomes a python3 that imports every MODULE (Debian's, when
# another python3 comes first on PATH without Debian's modules). Status 1, $PY empty, if none.
debian_python() {
	PY=
	for _p in python3 /usr/bin/python3; do
		_imports=$(printf 'import %s;' "$@")
		if "$_p" -c "$_imports" 2> /dev/null; then
			PY=$_p
			return 0
		fi
	done
	return 1
}
