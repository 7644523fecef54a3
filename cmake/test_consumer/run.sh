#!/usr/bin/env bash
# Builds and runs the consumer programs (main.c, main.cpp) against this checkout in every way a
# user consumes libtensor; each way runs a C and a C++ program (both including <libtensor/...>)
# and a C program with the older `#include "tensor.h"`:
#   1. make install PREFIX=P: find_package(tensor) shared + static; pkg-config shared, static
#      (libtensor.a with Libs.private) and fully static (-static); an incompatible version refused
#   2. make install PREFIX=/usr LIBDIR=lib/x86_64-linux-gnu DESTDIR=D (multiarch, staged):
#      find_package from the staged tree (relocatable), pkg-config with PKG_CONFIG_SYSROOT_DIR;
#      make uninstall leaves nothing behind
#   3. CMake from source, standalone: Debug (cargo dev profile), the C tests with -Werror
#      (TENSOR_WERROR, as cargo test builds them), ctest, cmake --install
#      --prefix P3 with LIBDIR lib64, then find_package + pkg-config there
#   4. add_subdirectory(<checkout>), Release; tensor::tensor static with BUILD_SHARED_LIBS=OFF
#   5. FetchContent from the local checkout (git, at HEAD: committed changes only), with a
#      cargo --target triple (the host's: the path a cross build takes); its cargo is a
#      stand-in that checks CMake's arguments and hands over step 3's archive
# All CMake-from-source builds run with CARGO_TARGET_DIR set, to one shared directory (the
# checkout's target/ unless CARGO_TARGET_DIR is already set), so cargo reuses its builds.
# Usage: cmake/test_consumer/run.sh   (from anywhere; needs cargo, cmake, pkg-config, cc, c++, git)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
here="$root/cmake/test_consumer"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$root/Cargo.toml" | head -n 1)
major=${version%%.*}
headers=$(cat "$root/cmake/headers.txt")
minor=${version#*.}
minor=${minor%%.*}
next_minor="$major.$((minor + 1))"
cd "$root"

fail() { echo "FAILED: $*" >&2; exit 1; }
t0=$(date +%s)
say() { echo; echo "--- [$(( $(date +%s) - t0 )) s] $*"; }

# run_programs DIR [static-only]: runs the consumers DIR built; the _static ones (and all of
# them with static-only) must not load libtensor.so.
run_programs() {
  local dir=$1 exe
  for exe in consumer_c consumer_c_flat consumer_cpp consumer_c_static consumer_cpp_static; do
    [ -x "$dir/$exe" ] || continue
    "$dir/$exe"
    if [[ $exe == *_static || ${2:-} == static-only ]] && [[ $(ldd "$dir/$exe") == *libtensor* ]]; then
      fail "$exe loads libtensor.so although it links the static library"
    fi
  done
}

# cmake_consumer NAME ARGS...: configures, builds and runs the consumer project.
cmake_consumer() {
  local name=$1
  shift
  cmake -S "$here" -B "$work/$name" -DTENSOR_REQUIRE_VERSION="$major.$minor" "$@" >"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "configuring the consumer ($name)"; }
  cmake --build "$work/$name" -j 2 >>"$work/$name.log" 2>&1 ||
    { cat "$work/$name.log"; fail "building the consumer ($name)"; }
  run_programs "$work/$name" "${STATIC_ONLY:-}"
}

# pkgconfig_consumer NAME [PKG_CONFIG_SYSROOT_DIR]: builds main.c / main.cpp with pkg-config's
# flags, shared and static (libtensor.a + Libs.private), and main.c fully static.
pkgconfig_consumer() {
  local name=$1 libdir cflags
  [ "$(pkg-config --modversion tensor)" = "$version" ] || fail "pkg-config --modversion is not $version"
  cflags="$(pkg-config --cflags tensor) -DEXPECTED_VERSION=\"$(pkg-config --modversion tensor)\""
  libdir=$(pkg-config --variable=libdir tensor) # (pkgconf prefixes PKG_CONFIG_SYSROOT_DIR)
  # shellcheck disable=SC2046,SC2086
  {
    cc -std=c99 -Wall -Wextra -pedantic -Werror $cflags "$here/main.c" -o "$work/$name/consumer_c" \
      $(pkg-config --libs tensor) -Wl,-rpath,"$libdir"
    cc -std=c99 -Wall -Wextra -pedantic -Werror -DTENSOR_FLAT_INCLUDE $cflags "$here/main.c" \
      -o "$work/$name/consumer_c_flat" $(pkg-config --libs tensor) -Wl,-rpath,"$libdir"
    c++ -std=c++17 -Wall -Wextra -Werror $cflags "$here/main.cpp" -o "$work/$name/consumer_cpp" \
      $(pkg-config --libs tensor) -Wl,-rpath,"$libdir"
    cc -std=c99 $cflags "$here/main.c" -o "$work/$name/consumer_c_static" "$libdir/libtensor.a" \
      $(pkg-config --static --libs-only-l tensor | sed 's/-ltensor//')
    c++ -std=c++17 $cflags "$here/main.cpp" -o "$work/$name/consumer_cpp_static" "$libdir/libtensor.a" \
      $(pkg-config --static --libs-only-l tensor | sed 's/-ltensor//')
    cc -static -std=c99 $cflags "$here/main.c" -o "$work/$name/consumer_fully_static" \
      $(pkg-config --static --libs tensor) 2>"$work/$name/static.log" ||
      { cat "$work/$name/static.log"; fail "cc -static \$(pkg-config --static --libs tensor)"; }
  }
  run_programs "$work/$name"
  "$work/$name/consumer_fully_static"
  if ldd "$work/$name/consumer_fully_static" >/dev/null 2>&1; then
    fail "the -static consumer is dynamically linked"
  fi
}

# check_install PREFIX LIBDIR INCLUDEDIR: the files (headers in INCLUDEDIR/libtensor only),
# SONAME, symbol versions and debug link.
check_install() {
  local p=$1 lib=$1/$2 inc=$1/$3 f
  for f in "$lib/libtensor.so.$version" "$lib/libtensor.so.$version.debug" "$lib/libtensor.so.$major" \
           "$lib/libtensor.so" "$lib/libtensor.a" "$lib/pkgconfig/tensor.pc" \
           "$lib/cmake/tensor/tensorConfig.cmake" "$lib/cmake/tensor/tensorConfigVersion.cmake"; do
    [ -e "$f" ] || fail "missing after install: $f"
  done
  for f in $headers; do
    [ -e "$inc/libtensor/$f" ] || fail "missing after install: $inc/libtensor/$f"
    [ ! -e "$inc/$f" ] || fail "$inc/$f installed flat (headers go in $inc/libtensor/)"
  done
  local dyn syms sections
  dyn=$(readelf -d "$lib/libtensor.so.$version")
  syms=$(readelf --dyn-syms -W "$lib/libtensor.so.$version")
  sections=$(readelf -SW "$lib/libtensor.so.$version")
  grep -q "SONAME.*\[libtensor.so.$major\]" <<<"$dyn" || fail "SONAME is not libtensor.so.$major"
  grep -q "tensor_ones@@TENSOR_0" <<<"$syms" || fail "tensor_ones is not versioned TENSOR_0"
  if grep -q debug_info <<<"$sections"; then fail "the installed .so is not stripped"; fi
  grep -q gnu_debuglink <<<"$sections" || fail "no .gnu_debuglink"
  # nm of the static archive: only the public API is global.
  local others
  others=$(nm -g --defined-only "$lib/libtensor.a" | awk 'NF == 3 {print $3}' | grep -cvE '^(tensor|storage)_' || true)
  [ "$others" = 0 ] || fail "libtensor.a has $others global symbols outside tensor_*/storage_*"
  echo "installed: $(du -b "$lib/libtensor.so.$version" | cut -f1) bytes libtensor.so.$version (stripped)," \
       "$(du -b "$lib/libtensor.a" | cut -f1) bytes libtensor.a; only tensor_*/storage_* global in the archive"
}

say "1. make; make install PREFIX=$work/prefix"
make --no-print-directory release >/dev/null
make --no-print-directory install PREFIX="$work/prefix" >/dev/null
check_install "$work/prefix" lib include
say "1a. CMake find_package(tensor) from the prefix: tensor::tensor, tensor::tensor_static"
cmake_consumer find -DCMAKE_PREFIX_PATH="$work/prefix" -DCMAKE_BUILD_TYPE=Release
say "1b. CMake: find_package(tensor $next_minor) is refused by tensor $version"
mkdir -p "$work/vcheck"
cat >"$work/vcheck/CMakeLists.txt" <<CM
cmake_minimum_required(VERSION 3.16)
project(vcheck NONE)
find_package(tensor $next_minor QUIET)
if(tensor_FOUND)
  message(FATAL_ERROR "tensor $version must not satisfy a request for $next_minor")
endif()
CM
cmake -S "$work/vcheck" -B "$work/vcheck/build" -DCMAKE_PREFIX_PATH="$work/prefix" >/dev/null
say "1c. pkg-config (shared, static, -static)"
mkdir -p "$work/pc1"
PKG_CONFIG_PATH="$work/prefix/lib/pkgconfig" pkgconfig_consumer pc1

say "2. make install PREFIX=/usr LIBDIR=lib/x86_64-linux-gnu DESTDIR=$work/stage (multiarch, staged)"
make --no-print-directory install PREFIX=/usr LIBDIR=lib/x86_64-linux-gnu DESTDIR="$work/stage" >/dev/null
check_install "$work/stage/usr" lib/x86_64-linux-gnu include
[ ! -e /usr/lib/x86_64-linux-gnu/libtensor.so.$version ] || echo "(note: a libtensor is installed in /usr)"
grep -q '^libdir=${prefix}/lib/x86_64-linux-gnu$' "$work/stage/usr/lib/x86_64-linux-gnu/pkgconfig/tensor.pc" ||
  fail "tensor.pc does not name the multiarch libdir"
say "2a. CMake find_package(tensor) from the staged multiarch tree"
cmake_consumer staged -DCMAKE_PREFIX_PATH="$work/stage/usr" -DCMAKE_BUILD_TYPE=Release
say "2b. pkg-config from the staged tree (PKG_CONFIG_SYSROOT_DIR)"
mkdir -p "$work/pc2"
PKG_CONFIG_PATH="$work/stage/usr/lib/x86_64-linux-gnu/pkgconfig" PKG_CONFIG_SYSROOT_DIR="$work/stage" \
  pkgconfig_consumer pc2
say "2c. make uninstall from the staged tree"
make --no-print-directory uninstall PREFIX=/usr LIBDIR=lib/x86_64-linux-gnu DESTDIR="$work/stage" >/dev/null
left=$(find "$work/stage" ! -type d)
[ -z "$left" ] || fail "make uninstall left: $left"

say "3. CMake from source, standalone: Debug (cargo dev profile), TENSOR_WERROR, CARGO_TARGET_DIR=$CARGO_TARGET_DIR; ctest; install"
cmake -S "$root" -B "$work/standalone" -DCMAKE_BUILD_TYPE=Debug -DTENSOR_WERROR=ON \
  -DCMAKE_INSTALL_LIBDIR=lib64 >"$work/standalone.log" 2>&1 || { cat "$work/standalone.log"; fail configure; }
cmake --build "$work/standalone" -j 2 >>"$work/standalone.log" 2>&1 || { cat "$work/standalone.log"; fail build; }
grep -q 'Finished `dev` profile' "$work/standalone.log" || fail "a Debug build did not build cargo's dev profile"
ctest --test-dir "$work/standalone" --output-on-failure
cmake --install "$work/standalone" --prefix "$work/prefix3" >/dev/null
check_install "$work/prefix3" lib64 include
# (Debian's CMake does not search lib64 for packages: name the directory, as on such a system)
cmake_consumer find3 -Dtensor_DIR="$work/prefix3/lib64/cmake/tensor" -DCMAKE_BUILD_TYPE=Release
mkdir -p "$work/pc3"
PKG_CONFIG_PATH="$work/prefix3/lib64/pkgconfig" pkgconfig_consumer pc3

say "4. add_subdirectory(<checkout>) (Release); then BUILD_SHARED_LIBS=OFF"
cmake_consumer subdir -DTENSOR_CONSUME=subdirectory -DTENSOR_SOURCE="$root" -DCMAKE_BUILD_TYPE=Release
if [[ $(cmake --build "$work/subdir" --target help) =~ test_core|example_ ]]; then
  fail "add_subdirectory built libtensor's tests or examples (off unless top-level)"
fi
STATIC_ONLY=static-only cmake_consumer subdir_static -DTENSOR_CONSUME=subdirectory -DTENSOR_SOURCE="$root" \
  -DCMAKE_BUILD_TYPE=Release -DBUILD_SHARED_LIBS=OFF

# Step 5's cargo is a stand-in: a real build of the fetched checkout would compile every
# dependency once more (a cargo target dir of its own: two checkouts of one package share
# build-script outputs in one target dir, and this one names its own absolute paths) for the
# library step 3 built from the same commit. The stand-in checks the arguments CMake gives
# cargo (`--target TRIPLE`, the dev profile, TENSOR_CARGO_TARGET_DIR) and puts step 3's
# archive where a --target build writes it; CMake stages it from there as from cargo's.
host=$(rustc -vV | sed -n 's/^host: //p')
say "5. FetchContent from the local checkout (git, HEAD $(git -C "$root" rev-parse --short HEAD)), Debug, TENSOR_CARGO_TARGET=$host (cargo: a stand-in)"
mkdir -p "$work/xtarget"
cat >"$work/fake-cargo" <<FAKE
#!/bin/sh
echo "\$*" >"$work/fake-cargo.args"
case " \$* " in *" --target $host "*) ;; *) echo "fake cargo: no --target $host in: \$*" >&2; exit 1 ;; esac
case " \$* " in *" --profile dev "*) ;; *) echo "fake cargo: no --profile dev in: \$*" >&2; exit 1 ;; esac
case " \$* " in *" --manifest-path $work/fetch/_deps/"*) ;; *) echo "fake cargo: not the fetched manifest: \$*" >&2; exit 1 ;; esac
[ "\$CARGO_TARGET_DIR" = "$work/xtarget" ] || { echo "fake cargo: CARGO_TARGET_DIR=\$CARGO_TARGET_DIR" >&2; exit 1; }
mkdir -p "\$CARGO_TARGET_DIR/$host/debug"
cp "$CARGO_TARGET_DIR/debug/libtensor.a" "\$CARGO_TARGET_DIR/$host/debug/libtensor.a"
FAKE
chmod +x "$work/fake-cargo"
cmake_consumer fetch -DTENSOR_CONSUME=fetchcontent -DTENSOR_GIT="$root" \
  -DTENSOR_GIT_TAG="$(git -C "$root" rev-parse HEAD)" -DCMAKE_BUILD_TYPE=Debug \
  -DTENSOR_CARGO_TARGET="$host" -DTENSOR_CARGO="$work/fake-cargo" -DTENSOR_CARGO_TARGET_DIR="$work/xtarget"
[ -s "$work/fake-cargo.args" ] || fail "CMake did not run cargo (TENSOR_CARGO) for the fetched checkout"
echo "cargo $(cat "$work/fake-cargo.args")"

echo
echo "consumer test passed in $(( $(date +%s) - t0 )) s: make install, multiarch + DESTDIR, CMake standalone + ctest + install," \
     "add_subdirectory, FetchContent, find_package, pkg-config (C and C++ each)"
