#!/usr/bin/env bash
# Meson builds of libtensor (meson.build), each running the consumer programs of
# cmake/test_consumer (C with <libtensor/tensor.h> and with "tensor.h", C++):
#   1. standalone: meson setup + ninja + meson install --destdir, the same files (modes,
#      symlinks, tensor.pc, CMake package) as `make install` with the same directories
#   2. a consumer project with subprojects/libtensor (a symlink to this checkout):
#      dependency('tensor', fallback : ['libtensor']), shared
#   3. the same with packaging/meson/libtensor.wrap in subprojects/ and a plain
#      dependency('tensor') (the wrap's [provide]), default_library=static
# cargo builds into CARGO_TARGET_DIR (default: the checkout's target/), so it reuses the
# release build of the other steps.
# Usage: packaging/test_meson/run.sh   (needs meson, ninja, cargo, cc, c++, make)
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
t0=$(date +%s)
say() { echo; echo "--- [$(( $(date +%s) - t0 )) s] $*"; }
fail() { echo "FAILED: $*" >&2; exit 1; }
quiet() { # runs "$@" with its output in $work/log, shown when it fails
  "$@" >"$work/log" 2>&1 || { cat "$work/log"; fail "$*"; }
}

say "1. meson setup + ninja + meson install --destdir (standalone), against make install"
quiet meson setup "$work/standalone" "$root" --prefix=/usr --libdir=lib/x86_64-linux-gnu
quiet ninja -C "$work/standalone"
quiet meson install -C "$work/standalone" --destdir "$work/meson-root"
quiet make -C "$root" --no-print-directory release
quiet make -C "$root" --no-print-directory install PREFIX=/usr LIBDIR=lib/x86_64-linux-gnu \
  DESTDIR="$work/make-root"
listing() { (cd "$1" && find . -printf '%p %m %l\n' | sort); }
diff <(listing "$work/make-root") <(listing "$work/meson-root") ||
  fail "meson install and make install install different files"
diff -r "$work/make-root" "$work/meson-root" || fail "meson install and make install differ"
echo "meson install = make install: $(find "$work/meson-root" ! -type d | wc -l) files"

# consumer NAME MESON-ARGS...: the consumer project with subprojects/libtensor -> checkout.
consumer() {
  local name=$1 src=$work/$1 exe
  shift
  mkdir -p "$src/subprojects"
  cp "$root/packaging/test_meson/meson.build" "$root/packaging/test_meson/meson_options.txt" \
     "$root/cmake/test_consumer/main.c" "$root/cmake/test_consumer/main.cpp" "$src/"
  ln -s "$root" "$src/subprojects/libtensor"
  if [ "${WRAP:-}" ]; then
    sed -e "s|^url = .*|url = $root|" -e "s|^revision = .*|revision = HEAD|" \
      "$root/packaging/meson/libtensor.wrap" >"$src/subprojects/libtensor.wrap"
  fi
  quiet meson setup "$src/build" "$src" --force-fallback-for=tensor "$@"
  quiet ninja -C "$src/build"
  for exe in consumer_c consumer_c_flat consumer_cpp; do
    "$src/build/$exe"
    if [ "${STATIC:-}" ]; then
      [[ $(ldd "$src/build/$exe") != *libtensor* ]] || fail "$exe loads libtensor.so (default_library=static)"
    else
      [[ $(ldd "$src/build/$exe") == *"libtensor.so.${MAJOR} => $src/build/subprojects/libtensor/"* ]] ||
        fail "$exe does not load the subproject's libtensor.so: $(ldd "$src/build/$exe")"
    fi
  done
}
MAJOR=$(sed -n 's/^version *= *"\([0-9]*\)\..*/\1/p' "$root/Cargo.toml" | head -n 1)

say "2. subprojects/libtensor, dependency('tensor', fallback : ['libtensor']), shared"
consumer fallback
say "3. subprojects/libtensor.wrap ([provide] tensor = libtensor_dep), dependency('tensor'), static"
WRAP=1 STATIC=1 consumer wrap -Dplain_dependency=true -Ddefault_library=static

echo
echo "meson test passed in $(( $(date +%s) - t0 )) s"
