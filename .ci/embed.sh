#!/usr/bin/env bash
# CI step for issue 9: every way of consuming libtensor from a native build
# (cmake/test_consumer/run.sh: make install, multiarch LIBDIR + DESTDIR, CMake from source
# standalone + ctest + install, add_subdirectory, FetchContent, find_package, pkg-config; a C
# and a C++ program each). Installs cmake, pkg-config, git, binutils, g++ when missing.
# All CMake-from-source builds share one CARGO_TARGET_DIR (the checkout's target/) with the
# earlier steps, so cargo reuses the release build of `make example`.
set -euo pipefail
cd "$(dirname "$0")/.."
SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo -n"; fi
missing=()
for tool in cmake:cmake pkg-config:pkg-config git:git readelf:binutils c++:g++; do
  command -v "${tool%%:*}" >/dev/null || missing+=("${tool#*:}")
done
if [ ${#missing[@]} -gt 0 ]; then
  echo "apt-get install ${missing[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
start=$(date +%s)
echo "+ bash cmake/test_consumer/run.sh"
bash cmake/test_consumer/run.sh
echo "consumers: $(( $(date +%s) - start )) s"
