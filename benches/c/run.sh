#!/bin/sh
# Builds benches/c/bench_copy.c against the release libtensor.so and runs it.
# Usage (from the repository root): sh benches/c/run.sh
set -e
cargo build --release --lib
mkdir -p target/release/bench_c
ln -sf ../libtensor.so target/release/bench_c/libtensor.so.0
cc -O2 -std=c99 -Wall -Wextra -Iinclude benches/c/bench_copy.c -o target/release/bench_c/bench_copy \
  -Ltarget/release -Wl,-rpath,"$(pwd)/target/release/bench_c" -ltensor
./target/release/bench_c/bench_copy
