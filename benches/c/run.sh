#!/bin/sh
# Builds libtensor.so (release) and benches/c/bench_views.c against it, then runs it.
# The library is copied into target/bench-c/ with its SONAME link (libtensor.so.0), so the
# program runs against exactly the build it was linked with.
# Usage: benches/c/run.sh [iters_per_round [rounds]]
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --release --lib
dir="$root/target/bench-c"
mkdir -p "$dir"
cp -f target/release/libtensor.so "$dir/libtensor.so"
ln -sf libtensor.so "$dir/libtensor.so.0"
${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -I"$root/include" benches/c/bench_views.c \
  -L"$dir" -Wl,-rpath,"$dir" -ltensor -o "$dir/bench_views"
exec "$dir/bench_views" "$@"
