#!/usr/bin/env bash
# Installs libtensor into a temporary prefix and builds + runs this consumer against it,
# with CMake (find_package(tensor): shared and static targets) and with pkg-config.
# Usage: cmake/test_consumer/run.sh   (from the repository root; needs cmake, pkg-config, cc)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
prefix="$work/prefix"
cd "$root"

echo "--- make (release build, staged in build/lib); make install PREFIX=$prefix"
make --no-print-directory release >/dev/null
make --no-print-directory install PREFIX="$prefix"
for f in lib/libtensor.so.0.1.0 lib/libtensor.so.0 lib/libtensor.so lib/libtensor.a include/tensor.h \
         lib/pkgconfig/tensor.pc lib/cmake/tensor/tensorConfig.cmake lib/cmake/tensor/tensorConfigVersion.cmake; do
  [ -e "$prefix/$f" ] || { echo "missing after install: $f" >&2; exit 1; }
done
soname=$(objdump -p "$prefix/lib/libtensor.so.0.1.0" | awk '/SONAME/ {print $2}')
[ "$soname" = "libtensor.so.0" ] || { echo "SONAME is '$soname', expected libtensor.so.0" >&2; exit 1; }

echo "--- CMake: find_package(tensor) -> tensor::tensor, tensor::tensor_static"
cmake -S cmake/test_consumer -B "$work/build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$work/build" >/dev/null
"$work/build/consumer"
"$work/build/consumer_static"
if ldd "$work/build/consumer_static" | grep -q libtensor; then
  echo "consumer_static links libtensor.so dynamically" >&2; exit 1
fi

echo "--- CMake: an incompatible version request is refused"
mkdir -p "$work/vcheck"
cat > "$work/vcheck/CMakeLists.txt" <<'CM'
cmake_minimum_required(VERSION 3.16)
project(vcheck NONE)
find_package(tensor 0.2 QUIET)
if(tensor_FOUND)
  message(FATAL_ERROR "tensor 0.1.0 must not satisfy a request for 0.2")
endif()
CM
cmake -S "$work/vcheck" -B "$work/vcheck/build" -DCMAKE_PREFIX_PATH="$prefix" >/dev/null

echo "--- pkg-config --cflags --libs tensor"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
[ "$(pkg-config --modversion tensor)" = "0.1.0" ] || { echo "pkg-config version mismatch" >&2; exit 1; }
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -pedantic -Werror cmake/test_consumer/main.c -o "$work/consumer_pc" \
   $(pkg-config --cflags --libs tensor) -Wl,-rpath,"$prefix/lib"
"$work/consumer_pc"
# shellcheck disable=SC2046
cc -std=c99 cmake/test_consumer/main.c -o "$work/consumer_pc_static" $(pkg-config --cflags tensor) \
   "$prefix/lib/libtensor.a" $(pkg-config --libs-only-other --libs-only-l --static tensor | sed 's/-ltensor//')
"$work/consumer_pc_static"
echo "consumer test passed"
