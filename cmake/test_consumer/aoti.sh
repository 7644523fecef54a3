#!/usr/bin/env bash
# The AOTInductor runtime as a user consumes it: `make aoti`, `make install WITH_AOTI=1
# PREFIX=P`; the installed files (SONAME, stripped, .debug, headers, tensor_aoti.pc,
# tensor::aoti), examples_c/aoti_run.c built against P with pkg-config and with
# find_package(tensor COMPONENTS aoti) and run (on MODEL.pt2 when given: the classifier
# examples_c/aoti_model.py defines; without one, only its usage exit, which still loads
# libtensor_aoti.so and libtensor.so from P); find_package(... COMPONENTS aoti) refused by an
# install without it; CMake from source with TENSOR_AOTI=ON + cmake --install installs the same
# files; `make uninstall` leaves nothing.
# Usage: cmake/test_consumer/aoti.sh [MODEL.pt2]   (needs libsleef-dev, cargo, cmake, pkg-config)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
model=${1:-}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
aver=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$root/aoti/Cargo.toml" | head -n 1)
fail() { echo "FAILED: $*" >&2; exit 1; }
# (the CMake build reuses cargo's builds there, as run.sh's do)
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
cd "$root"
make --no-print-directory aoti >/dev/null
p=$work/prefix lib=$work/prefix/lib
make --no-print-directory install WITH_AOTI=1 PREFIX="$p" >/dev/null
for f in "$lib/libtensor_aoti.so.$aver" "$lib/libtensor_aoti.so.$aver.debug" "$lib/libtensor_aoti.so.${aver%%.*}" \
         "$lib/libtensor_aoti.so" "$lib/pkgconfig/tensor_aoti.pc" "$lib/cmake/tensor/tensorAotiTargets.cmake" \
         "$p/include/libtensor/tensor_aoti.h" "$p/include/libtensor/tensor_aoti.hpp" \
         "$p/share/libtensor/python/tensor_aoti_compile.py"; do
  [ -e "$f" ] || fail "missing after install: $f"
done
dyn=$(readelf -d "$lib/libtensor_aoti.so.$aver")
grep -q "SONAME.*\[libtensor_aoti.so.${aver%%.*}\]" <<<"$dyn" || fail "SONAME is not libtensor_aoti.so.${aver%%.*}"
if readelf -SW "$lib/libtensor_aoti.so.$aver" | grep -q debug_info; then fail "libtensor_aoti.so is not stripped"; fi
readelf -SW "$lib/libtensor_aoti.so.$aver" | grep -q gnu_debuglink || fail "libtensor_aoti.so has no .gnu_debuglink"

# run_example EXE: the example loads both libraries from the prefix.
run_example() {
  local out rc=0
  [[ $(ldd "$1") == *"$lib/libtensor_aoti.so.${aver%%.*}"* ]] || fail "$1 does not load $lib/libtensor_aoti.so"
  [[ $(ldd "$1") == *"$lib/libtensor.so.0"* ]] || fail "$1 does not load $lib/libtensor.so.0"
  if [ -n "$model" ]; then
    "$1" "$model" || fail "$1 $model"
  else
    out=$("$1" 2>&1) || rc=$?
    [ "$rc" = 2 ] && [[ $out == usage:* ]] || fail "$1 without a model: exit $rc, '$out'"
    echo "$1: usage exit (no model given)"
  fi
}

export PKG_CONFIG_PATH="$lib/pkgconfig"
[ "$(pkg-config --modversion tensor_aoti)" = "$aver" ] || fail "pkg-config --modversion tensor_aoti is not $aver"
# shellcheck disable=SC2046
cc -std=c99 -Wall -Wextra -pedantic -Werror $(pkg-config --cflags tensor_aoti) examples_c/aoti_run.c \
  -o "$work/aoti_run_pc" $(pkg-config --libs tensor_aoti) -lm -Wl,-rpath,"$lib"
run_example "$work/aoti_run_pc"

mkdir -p "$work/cm"
cat >"$work/cm/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(aoti_consumer C)
find_package(tensor REQUIRED COMPONENTS aoti)
add_executable(aoti_run "$root/examples_c/aoti_run.c")
target_link_libraries(aoti_run PRIVATE tensor::aoti m)
CM
cmake -S "$work/cm" -B "$work/cm/build" -DCMAKE_PREFIX_PATH="$p" -DCMAKE_BUILD_RPATH="$lib" >"$work/cm.log" 2>&1 &&
  cmake --build "$work/cm/build" >>"$work/cm.log" 2>&1 || { cat "$work/cm.log"; fail "find_package(tensor COMPONENTS aoti)"; }
run_example "$work/cm/build/aoti_run"

# CMake from source with TENSOR_AOTI=ON: cmake --install installs the same, find_package again.
cmake -S "$root" -B "$work/src" -DTENSOR_AOTI=ON -DTENSOR_BUILD_TESTS=OFF -DTENSOR_BUILD_EXAMPLES=OFF \
  >"$work/src.log" 2>&1 && cmake --build "$work/src" -j 2 >>"$work/src.log" 2>&1 &&
  cmake --install "$work/src" --prefix "$work/p2" >>"$work/src.log" 2>&1 ||
  { cat "$work/src.log"; fail "cmake -DTENSOR_AOTI=ON build / install"; }
diff <(cd "$p" && find . | sort) <(cd "$work/p2" && find . | sort) ||
  fail "cmake --install (TENSOR_AOTI=ON) and make install WITH_AOTI=1 install different files"
cmake -S "$work/cm" -B "$work/cm/build2" -DCMAKE_PREFIX_PATH="$work/p2" -DCMAKE_BUILD_RPATH="$work/p2/lib" \
  >"$work/cm2.log" 2>&1 && cmake --build "$work/cm/build2" >>"$work/cm2.log" 2>&1 ||
  { cat "$work/cm2.log"; fail "find_package(tensor COMPONENTS aoti) from cmake --install"; }
lib=$work/p2/lib run_example "$work/cm/build2/aoti_run"

# Without WITH_AOTI: no AOTI file, and the component is refused.
make --no-print-directory install PREFIX="$work/plain" >/dev/null
[ -z "$(find "$work/plain" -name '*aoti*')" ] || fail "make install without WITH_AOTI installed: $(find "$work/plain" -name '*aoti*')"
if cmake -S "$work/cm" -B "$work/cm/plain" -DCMAKE_PREFIX_PATH="$work/plain" >"$work/plain.log" 2>&1; then
  fail "find_package(tensor REQUIRED COMPONENTS aoti) succeeded on an install without it"
fi
grep -q "component 'aoti' is not installed" "$work/plain.log" || { cat "$work/plain.log"; fail "no message for the missing component"; }

make --no-print-directory uninstall PREFIX="$p" >/dev/null
left=$(find "$p" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"
echo "aoti consumer test passed: make install WITH_AOTI=1, pkg-config tensor_aoti, find_package(tensor COMPONENTS aoti)," \
     "cmake -DTENSOR_AOTI=ON + cmake --install, ${model:+run on $model, }uninstall"
