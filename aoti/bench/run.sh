#!/usr/bin/env bash
# The AOTI benchmark (BENCHMARKS.md): builds the release libraries (libtensor staged as
# shipped, libtensor_aoti), compiles bench_run.c against them, compiles the test models
# (tests/make_models.py) and runs bench.py: each model through libtensor_aoti (a C process)
# and through libtorch (aoti_load_package in Python), single-threaded, same .pt2 and inputs.
#   bash aoti/bench/run.sh [N]       (from anywhere; N runs per model, default 300)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. .ci/lib.sh
ci_venv torch numpy
version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
out=target/aoti-bench
mkdir -p "$out/lib" "$out/models"
run cargo build --release -p tensor -p tensor_aoti
run sh cmake/stage.sh target/release/libtensor.a "$out/lib" "$version"
cp target/release/libtensor_aoti.so "$out/lib/libtensor_aoti.so"
ln -sf libtensor_aoti.so "$out/lib/libtensor_aoti.so.0"
run cc -std=c99 -O2 -Iinclude aoti/bench/bench_run.c -o "$out/lib/bench_run" -L"$out/lib" \
  -Wl,-rpath,"$root/$out/lib" -ltensor_aoti -ltensor -lm
[ -f "$out/models/manifest.txt" ] || run "$VENV/bin/python" aoti/tests/make_models.py "$out/models"
run "$VENV/bin/python" aoti/bench/bench.py "$out/lib" "$out/models" "${1:-300}"
