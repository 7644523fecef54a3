#!/usr/bin/env bash
# The AOTInductor runtime (libtensor_aoti, aoti/): installs Debian's libsleef if missing,
# lints the crate, builds libtensor (its static archive is staged into the shipped,
# versioned libtensor.so.0), compiles the test models once with the CI venv's torch and runs
# the C host (under valgrind unless TENSOR_VALGRIND=0), the C++ wrapper test and the shim /
# kernel tests against libtorch, then installs it (cmake/test_consumer/aoti.sh).
#   bash .ci/aoti.sh            (from the repository root; .ci/run's aoti stage)
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. .ci/lib.sh
[ -e /usr/include/sleef.h ] || apt_install libsleef3 libsleef-dev
ci_venv torch numpy torchvision transformers
export TENSOR_AOTI_PYTHON="${TENSOR_AOTI_PYTHON:-$VENV/bin/python}"
export TENSOR_AOTI_REQUIRE="${TENSOR_AOTI_REQUIRE:-1}"
# The C host under valgrind (TENSOR_VALGRIND=0 to skip it).
export TENSOR_VALGRIND="${TENSOR_VALGRIND:-1}"
start=$(date +%s)
run cargo clippy -p tensor_aoti --all-targets -- -D warnings
# Apart: built together, the two packages' shared dependencies (half) unify their features
# and the whole of libtensor compiles again, for a library identical in what it does.
run cargo build --lib -p tensor
run cargo build --lib -p tensor_aoti # (cargo test does not link the cdylib the tests load)
run cargo test -p tensor_aoti -- --nocapture
# Installed with `make install WITH_AOTI=1`, consumed with pkg-config and find_package, run on
# the example model the tests just used (make_models.py names the cache directory it keeps
# them in; it compiles nothing when that is complete).
models=$("$TENSOR_AOTI_PYTHON" aoti/tests/make_models.py --cache \
  "${TENSOR_AOTI_CACHE:-${HOME:-/tmp}/.cache/libtensor-aoti-models}" | sed -n 's/^models: //p')
[ -n "$models" ] || { echo "aoti.sh: make_models.py --cache named no directory" >&2; exit 1; }
run bash cmake/test_consumer/aoti.sh "$models/example.pt2"
echo "aoti.sh: $(($(date +%s) - start)) s"
