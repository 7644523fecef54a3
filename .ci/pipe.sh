#!/usr/bin/env bash
# CI's pipeline stage: installs OpenCV and FFmpeg's libavutil, libswscale and libavcodec when
# pkg-config cannot find them (Debian packages), then checks that the OpenCV snippet of docs/guide.md
# compiles (-fsyntax-only, -Werror; it reads an image file, so it is not run). The programs
# that need those libraries (c_tests/test_opencv*.cpp, test_yuv_swscale.c, the OpenCV and
# FFmpeg examples) run in .ci/run's readme and valgrind stages (TENSOR_C_REQUIRE_PKGS=1 there:
# a missing library fails);
# PIPE_RUN_PROGRAMS=1 runs them here too, under valgrind.
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."
. .ci/lib.sh
need pkg-config:pkg-config valgrind:valgrind
libs=()
pkg-config --exists opencv4 2>/dev/null || libs+=(libopencv-dev)
pkg-config --exists libavutil 2>/dev/null || libs+=(libavutil-dev)
pkg-config --exists libswscale 2>/dev/null || libs+=(libswscale-dev)
pkg-config --exists libavcodec 2>/dev/null || libs+=(libavcodec-dev)
if [ ${#libs[@]} -gt 0 ]; then apt_install "${libs[@]}"; fi
echo "opencv4 $(pkg-config --modversion opencv4), libavutil $(pkg-config --modversion libavutil), libswscale $(pkg-config --modversion libswscale), libavcodec $(pkg-config --modversion libavcodec)"

if [ "${PIPE_RUN_PROGRAMS:-0}" = 1 ]; then
  export TENSOR_VALGRIND=1 TENSOR_C_REQUIRE_PKGS=1
  run env TENSOR_C_ONLY=test_opencv,test_opencv_noexcept,test_yuv_swscale cargo test --test c_api c_and_cpp_programs_pass -- --nocapture
  run env TENSOR_C_ONLY=opencv_pipeline,ffmpeg_planes cargo test --test c_api examples_run -- --nocapture
fi

# The guide's OpenCV round trip compiles (syntax and types; it reads an image file, so it
# is not run: examples_c/opencv_pipeline.cpp runs the same steps).
mkdir -p build
# The guide's ```cpp block that includes tensor_opencv.hpp (whatever its position).
awk '/^```cpp$/ {f = 1; b = ""; next} /^```$/ {if (f && b ~ /tensor_opencv\.hpp/) printf "%s", b; f = 0; next}
     f {b = b $0 "\n"}' docs/guide.md > build/guide_opencv_block.txt
test -s build/guide_opencv_block.txt || { echo "docs/guide.md: no cpp block includes tensor_opencv.hpp" >&2; false; }
{
  echo '#include <opencv2/imgcodecs.hpp>'
  grep '^#include' build/guide_opencv_block.txt
  echo 'int main() {'
  grep -v '^#include' build/guide_opencv_block.txt
  echo 'return green.empty() ? 1 : 0; }'
} > build/guide_opencv.cpp
# shellcheck disable=SC2046
run c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Iinclude $(pkg-config --cflags opencv4 | sed 's/-I/-isystem /g') \
  build/guide_opencv.cpp
echo "the guide's OpenCV snippet: compiles"
