#!/usr/bin/env bash
# The HTML API reference (docs/Doxyfile: include/tensor.h, tensor.hpp, tensor_opencv.hpp and
# docs/*.md) builds with Doxygen, warnings as errors. Installs doxygen if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
if ! command -v doxygen >/dev/null; then
  SUDO=""
  if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo -n"; fi
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends doxygen >/dev/null
fi
doxygen --version
rm -rf build/docs
mkdir -p build/docs
doxygen docs/Doxyfile
test -f build/docs/html/index.html
echo "API reference: build/docs/html/index.html ($(find build/docs/html -name '*.html' | wc -l) pages, no warnings)"
