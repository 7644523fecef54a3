#!/usr/bin/env bash
# Every way of consuming libtensor from a native build (cmake/test_consumer/run.sh: make
# install, multiarch LIBDIR + DESTDIR, CMake from source standalone + ctest + install,
# add_subdirectory, FetchContent, find_package, pkg-config; a C and a C++ program each).
# Installs cmake, pkg-config, git, binutils, g++ when missing. All CMake-from-source builds
# share one CARGO_TARGET_DIR (the checkout's target/) with the earlier stages, so cargo reuses
# the release build of `make example`.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh
need cmake:cmake pkg-config:pkg-config git:git readelf:binutils c++:g++
start=$(date +%s)
echo "+ bash cmake/test_consumer/run.sh"
bash cmake/test_consumer/run.sh
echo "consumers: $(( $(date +%s) - start )) s"
