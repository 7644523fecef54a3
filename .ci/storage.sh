#!/usr/bin/env bash
# Mapped files, .safetensors / .npy, shared memory: interop with NumPy, the safetensors
# package and PyTorch, and the two-process shared-memory example.
#   bash .ci/storage.sh            (from the repository root; called by .ci/run)
# Uses the CI venv (.ci/lib.sh ci_venv: torch, numpy; safetensors added). Exits non-zero on
# any failure.
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. .ci/lib.sh
ci_venv torch numpy safetensors
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
