#!/usr/bin/env bash
# The HTML API reference (docs/Doxyfile: include/tensor.h, tensor.hpp, tensor_opencv.hpp,
# tensor_ffmpeg.hpp and docs/*.md) builds with Doxygen, warnings as errors. Installs doxygen if it is missing.
set -euo pipefail
cd "$(dirname "$0")/.."
. .ci/lib.sh
need doxygen:doxygen
doxygen --version
rm -rf build/docs
mkdir -p build/docs
doxygen docs/Doxyfile
test -f build/docs/html/index.html
echo "API reference: build/docs/html/index.html ($(find build/docs/html -name '*.html' | wc -l) pages, no warnings)"
