#!/bin/bash
# Issue 10 (memory you can see and control): builds the release library and runs the
# view-leak example (examples_c/view_leak.c) under valgrind; it exits non-zero unless the
# memory snapshot finds the 40 MiB storage pinned by a 10-element view and the clone fix
# releases it. The exact-figure C tests (c_tests/test_memory*.c) run in `cargo test`.
set -euo pipefail
cd "$(dirname "$0")/.."
run() { echo "+ $*"; "$@"; }
if ! command -v valgrind >/dev/null; then
  run apt-get install -y --no-install-recommends valgrind
fi
run cargo build --release --lib
mkdir -p build/lib
ln -sf ../../target/release/libtensor.so build/lib/libtensor.so
ln -sf ../../target/release/libtensor.so build/lib/libtensor.so.0
run "${CC:-cc}" -std=c99 -Wall -Wextra -pedantic -Werror -O2 -Iinclude examples_c/view_leak.c \
  -o build/view_leak -Lbuild/lib -Wl,-rpath,"$PWD/build/lib" -ltensor
run valgrind --error-exitcode=1 --leak-check=full \
  --errors-for-leak-kinds=definite,indirect,possible --quiet build/view_leak
echo "view-leak example: snapshot found the pinned storage; clean under valgrind"
