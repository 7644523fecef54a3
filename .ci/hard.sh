#!/usr/bin/env bash
# The release build answers the same documented statuses as the debug build. `cargo test`
# (.ci/run's readme stage), valgrind and the PyTorch conformance (stages valgrind, pytorch) run
# against target/debug/libtensor.so, whose integer arithmetic panics on overflow (caught:
# TENSOR_ERR_INTERNAL); the release build's would wrap. This runs the C/C++ tests and the
# conformance against target/release/libtensor.so too. Self-contained; run from anywhere:
#   bash .ci/hard.sh
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

. .ci/lib.sh

run cargo build --release --lib
run env TENSOR_TEST_LIB="$PWD/target/release/libtensor.so" cargo test --test c_api -- --nocapture

ci_venv torch numpy
run "$VENV/bin/python" conformance/conformance.py --lib target/release/libtensor.so --steps 3000 --seed 1
echo "hard.sh: release build checked"
