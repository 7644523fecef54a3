#!/bin/sh
# Deterministic instruction counts (valgrind's callgrind) per call of each benchmarked op,
# independent of machine load: runs bench_views with 10000 calls per op after its 1000
# warm-up calls, and divides each benchmark loop's inclusive count by 11000. A second run
# with memory tracking on ("tracked") gives the rows of views of a tracked storage.
# Usage: benches/c/count.sh   (after benches/c/run.sh has built target/bench-c/)
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
dir="${BENCH_DIR:-$root/target/bench-c}"
out=$(mktemp)
trap 'rm -f "$out"' EXIT
rows() {
  callgrind_annotate --inclusive=yes --threshold=100 "$out" 2>/dev/null |
    awk -v only="$1" '$0 ~ /\?\?\?:b_[a-z0-9_]+ \[/ {
           v = $1; gsub(",", "", v);
           match($0, /b_[a-z0-9_]+/); name = substr($0, RSTART, RLENGTH);
           if ((only == "tracked") == (name ~ /^b_tracked/))
             printf "| %s | %.0f |\n", name, v / 11000 }'
}
echo "| op (benchmark loop) | instructions per call |"
echo "|---|---|"
valgrind --tool=callgrind --callgrind-out-file="$out" "$dir/bench_views" 10000 1 >/dev/null 2>&1
rows untracked
valgrind --tool=callgrind --callgrind-out-file="$out" "$dir/bench_views" 10000 1 tracked >/dev/null 2>&1
rows tracked
