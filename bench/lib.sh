# SPDX-License-Identifier: Apache-2.0
# bench/lib.sh: what the benchmark scripts share. Source it: . "$(dirname "$0")/lib.sh"
# now_us: the time in microseconds (date's %6N truncates, as dividing %N by 1000 would;
# one process fewer per call, which matters next to a reference of a millisecond or two).
now_us() { date +%s%6N; }
# median [FILE]: the median of the numbers in FILE (or stdin), one per line; the mean of the
# middle two when their count is even. %.15g, not awk's default %.6g: microsecond and
# nanosecond values keep every digit. Nothing and status 1 when there are no numbers.
median() {
	sort -n "$@" | awk 'NF { a[++n] = $1 }
		END { if (!n) exit 1; printf "%.15g\n", (n % 2) ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2 }'
}
# percentile P [FILE]: the P-th percentile of the numbers in FILE (or stdin) by nearest rank:
# the value at rank ceil(N * P / 100) of the N sorted (at least 1). Status 1 when there are none.
percentile() {
	sort -n ${2+"$2"} | awk -v p="$1" 'NF { a[++n] = $1 }
		END { if (!n) exit 1; i = int(n * p / 100); if (i < n * p / 100) i++; if (i < 1) i = 1
		      printf "%.15g\n", a[i] }'
}
