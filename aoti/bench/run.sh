#!/usr/bin/env bash
# The AOTI benchmark (BENCHMARKS.md, "AOTInductor models"): builds the release libraries and
# stages them as shipped (cmake/stage.sh: libtensor.so, libtensor_aoti.so, stripped), the C
# host (bench_run.c) against them and the C++ host (bench_libtorch.cpp) against the CI
# venv's torch wheel (its headers, libtorch_cpu, libc10; libsleef for vectorized packages),
# compiles the benchmark models once (make_models.py: zoo.py at size "bench", freezing=False
# and freezing=True packages, a few minutes each) and runs bench.py (interleaved rounds,
# 1 and 2 threads). Arguments go to bench.py, e.g.
#   bash aoti/bench/run.sh                        # every model, 1 and 2 threads, 20 rounds
#   bash aoti/bench/run.sh --models bert --threads 2 --rounds 50
# Installs Debian's libsleef3 / libsleef-dev when missing (both hosts need it); needs g++ and a
# few GB of disk for the packages.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
. .ci/lib.sh
[ -e /usr/include/sleef.h ] || apt_install libsleef3 libsleef-dev
ci_venv torch numpy torchvision transformers
version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
aoti_version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' aoti/Cargo.toml | head -n 1)
out=target/aoti-bench
mkdir -p "$out/lib" "$out/models"
run cargo build --release -p tensor # (apart: see .ci/aoti.sh)
run cargo build --release -p tensor_aoti
run sh cmake/stage.sh target/release/libtensor.a "$out/lib" "$version"
run sh cmake/stage.sh aoti target/release/libtensor_aoti.so "$out/lib" "$aoti_version"
run cc -std=c99 -O2 -Iinclude aoti/bench/bench_run.c -o "$out/lib/bench_run" -L"$out/lib" \
  -Wl,-rpath,"$root/$out/lib" -ltensor_aoti -ltensor -lm
torch=$("$VENV/bin/python" -c "import os, torch; print(os.path.dirname(torch.__file__))")
if [ ! -x "$out/lib/bench_libtorch" ] || [ aoti/bench/bench_libtorch.cpp -nt "$out/lib/bench_libtorch" ]; then
  run g++ -std=c++20 -O2 -I"$torch/include" -I"$torch/include/torch/csrc/api/include" \
    aoti/bench/bench_libtorch.cpp -o "$out/lib/bench_libtorch" -L"$torch/lib" \
    -Wl,-rpath,"$torch/lib" -Wl,--no-as-needed -ltorch_cpu -lc10 -l:libsleef.so.3
fi
run "$VENV/bin/python" aoti/bench/make_models.py "$out/models"
run "$VENV/bin/python" aoti/bench/bench.py "$out/lib" "$out/models" "$@"
