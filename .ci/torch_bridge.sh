#!/usr/bin/env bash
# include/tensor_torch.hpp against the CI venv's torch wheel (its libtorch headers and
# libraries): builds c_tests/test_torch.cpp twice and examples_c/torch_bridge.cpp against
# target/debug/libtensor.so and runs them, as C++20 (torch 2.15's ATen needs it;
# tensor_torch.hpp itself is C++17), with -Wall -Wextra -pedantic -Werror (libtorch's headers
# as system headers). test_torch.cpp is built:
#   - libtorch's DLPack 1.x API (at::fromDLPackVersioned), tensor.h included before ATen's
#     DLPack structs;
#   - the legacy DLManagedTensor route (-DLIBTENSOR_TORCH_DLPACK_VERSIONED=0), ATen's DLPack
#     structs included before tensor.h.
# Each TU takes a minute or more (ATen's headers); the three compile in parallel.
# TENSOR_VALGRIND=1 also runs the first under valgrind (minutes: libtorch is large), zero
# errors and no definite or indirect leak required, with c_tests/torch.supp for libtorch's
# own reports; the pytorch stage leaves it off.
#   bash .ci/torch_bridge.sh        (from the repository root; .ci/run's pytorch stage)
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. .ci/lib.sh
ci_venv torch numpy
tdir=$("$VENV/bin/python" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
abi=$("$VENV/bin/python" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
"$VENV/bin/python" -c 'import torch; print("torch", torch.__version__)'
run cargo build --lib
out=build/torch_bridge
mkdir -p "$out/lib"
# The SONAME the programs ask for (libtensor.so.0), next to the library.
cp target/debug/libtensor.so "$out/lib/libtensor.so"
ln -sf libtensor.so "$out/lib/libtensor.so.0"
compile() {
  local src=$1 exe=$2
  shift 2
  run "${CXX:-c++}" -std=c++20 -O1 -g -Wall -Wextra -pedantic -Werror -D_GLIBCXX_USE_CXX11_ABI="$abi" "$@" \
    -isystem "$tdir/include" -isystem "$tdir/include/torch/csrc/api/include" -Iinclude -Ic_tests \
    "$src" -o "$out/$exe" -L"$out/lib" -Wl,-rpath,"$PWD/$out/lib" -ltensor \
    -L"$tdir/lib" -Wl,-rpath,"$tdir/lib" -ltorch -ltorch_cpu -lc10 -lpthread
}
compile c_tests/test_torch.cpp test_torch &
p1=$!
compile c_tests/test_torch.cpp test_torch_legacy -DLIBTENSOR_TORCH_DLPACK_VERSIONED=0 -DTEST_TORCH_ATEN_FIRST &
p2=$!
compile examples_c/torch_bridge.cpp torch_bridge &
p3=$!
rc=0
wait "$p1" || rc=$?
wait "$p2" || rc=$?
wait "$p3" || rc=$?
[ "$rc" = 0 ] || { echo "compiling c_tests/test_torch.cpp or examples_c/torch_bridge.cpp failed" >&2; exit "$rc"; }
run "$out/test_torch"
run "$out/test_torch_legacy"
run "$out/torch_bridge"
if [ "${TENSOR_VALGRIND:-0}" = 1 ]; then
  run env TENSOR_TEST_UNDER_VALGRIND=1 valgrind --quiet --error-exitcode=1 --leak-check=full \
    --show-leak-kinds=definite,indirect --errors-for-leak-kinds=definite,indirect \
    --suppressions=c_tests/torch.supp "$out/test_torch"
fi
