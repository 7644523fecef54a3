#!/bin/sh
# The AOTInductor tests (libtensor_aoti, aoti/): installs libsleef (Debian) if missing,
# builds libtensor (its static archive is staged into the shipped, versioned libtensor.so.0),
# compiles the test models once with the CI venv's torch and runs the C host (under
# valgrind unless TENSOR_VALGRIND=0), the C++ wrapper test and the shim / kernel tests
# against libtorch. Usage: .ci/aoti.sh  (from the repository root)
set -eu
cd "$(dirname "$0")/.."
if ! [ -e /usr/include/sleef.h ]; then
  apt-get install -y libsleef3 libsleef-dev >/dev/null 2>&1 || {
    apt-get update >/dev/null && apt-get install -y libsleef3 libsleef-dev >/dev/null
  }
fi
export TENSOR_AOTI_PYTHON="${TENSOR_AOTI_PYTHON:-/root/.cache/libtensor-ci-venv/bin/python}"
export TENSOR_AOTI_REQUIRE="${TENSOR_AOTI_REQUIRE:-1}"
# The C host under valgrind (TENSOR_VALGRIND=0 to skip it).
export TENSOR_VALGRIND="${TENSOR_VALGRIND:-1}"
start=$(date +%s)
cargo build --lib -p tensor
cargo test -p tensor_aoti -- --nocapture
echo "aoti.sh: $(($(date +%s) - start)) s"
