# bench/lib.sh: what the benchmark scripts share. Source it: . "$(dirname "$0")/lib.sh"
# now_us: the time in microseconds.
now_us() { echo $(( $(date +%s%N) / 1000 )); }
# median FILE: the median of the numbers in FILE, one per line.
median() { sort -n "$1" | awk '{a[NR]=$1} END {print (NR%2) ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2}'; }
