#!/usr/bin/env bash
# Issue 11 (mapped files, safetensors / .npy, shared memory): interop with NumPy, the
# safetensors package and PyTorch, and the two-process shared-memory example.
#   bash .ci/storage.sh            (from the repository root; called by .ci/run)
# Needs the venv of .ci/run step 8 ($VENV: torch, numpy); installs safetensors into it
# (and creates it when run alone). Exits non-zero on any failure.
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

run() {
  echo "+ $*"
  "$@"
}

VENV="${LIBTENSOR_CI_VENV:-${HOME:-/tmp}/.cache/libtensor-ci-venv}"
if [ ! -x "$VENV/bin/python" ] || ! "$VENV/bin/python" -c "import torch, numpy" 2>/dev/null; then
  echo "creating $VENV with torch, numpy"
  rm -rf "$VENV"
  if ! python3 -m venv "$VENV"; then
    rm -rf "$VENV"
    SUDO=""
    if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo -n"; fi
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
    $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends python3-venv >/dev/null
    python3 -m venv "$VENV"
  fi
  run "$VENV/bin/python" -m pip install --quiet --upgrade pip
  run "$VENV/bin/python" -m pip install --quiet torch numpy
fi
if ! "$VENV/bin/python" -c "import safetensors" 2>/dev/null; then
  run "$VENV/bin/python" -m pip install --quiet safetensors
fi
"$VENV/bin/python" -c "import numpy, safetensors, torch; print('numpy', numpy.__version__, '| safetensors', safetensors.__version__, '| torch', torch.__version__)"

run cargo build
run "$VENV/bin/python" tests/files_interop.py --lib target/debug/libtensor.so

# The two-process example, linked like the C tests (SONAME link next to the library).
mkdir -p build/storage/lib
cp target/debug/libtensor.so build/storage/lib/libtensor.so
ln -sf libtensor.so build/storage/lib/libtensor.so.0
run cc -std=c99 -Wall -Wextra -pedantic -Werror -Iinclude examples_c/shared_frames.c \
  -o build/storage/shared_frames -Lbuild/storage/lib -Wl,-rpath,"$PWD/build/storage/lib" -ltensor
run build/storage/shared_frames
run valgrind --quiet --error-exitcode=1 --leak-check=full \
  --errors-for-leak-kinds=definite,indirect,possible build/storage/shared_frames
echo "storage: interop and shared-memory example passed"
