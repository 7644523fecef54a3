#!/usr/bin/env bash
# Image and video pipeline (issue 12): installs OpenCV and FFmpeg's libavutil (Debian
# packages, idempotent), then builds and runs, under valgrind (zero errors, zero leaks,
# no suppressions), the programs that need them: the OpenCV tests (c_tests/test_opencv*.cpp)
# and the OpenCV and FFmpeg examples (examples_c/). A missing library is a failure here
# (TENSOR_C_REQUIRE_PKGS=1), not a skip. (Steps 4 and 6 of .ci/run already ran them too when
# the libraries were installed before; the other pipeline tests and the view tour need no
# library and run there.)
set -Eeuo pipefail
exec </dev/null
cd "$(dirname "$0")/.."

SUDO=""
if [ "$(id -u)" != 0 ] && command -v sudo >/dev/null; then SUDO="sudo -n"; fi
need=()
command -v pkg-config >/dev/null || need+=(pkg-config)
pkg-config --exists opencv4 2>/dev/null || need+=(libopencv-dev)
pkg-config --exists libavutil 2>/dev/null || need+=(libavutil-dev)
command -v valgrind >/dev/null || need+=(valgrind)
if [ ${#need[@]} -gt 0 ]; then
  echo "+ apt-get update; apt-get install ${need[*]}"
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get update -qq
  $SUDO env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
else
  echo "pkg-config, libopencv-dev, libavutil-dev, valgrind: present"
fi
echo "opencv4 $(pkg-config --modversion opencv4), libavutil $(pkg-config --modversion libavutil)"

run() {
  echo "+ $*"
  "$@"
}
# Standalone (outside .ci/run, which already ran every program under valgrind in step 6):
# PIPE_RUN_PROGRAMS=1 bash .ci/pipe.sh runs the OpenCV / FFmpeg programs under valgrind.
if [ "${PIPE_RUN_PROGRAMS:-0}" = 1 ]; then
  export TENSOR_VALGRIND=1 TENSOR_C_REQUIRE_PKGS=1
  run env TENSOR_C_ONLY=test_opencv,test_opencv_noexcept cargo test --test c_api c_and_cpp_programs_pass -- --nocapture
  run env TENSOR_C_ONLY=opencv_pipeline,ffmpeg_planes cargo test --test c_api examples_run -- --nocapture
fi

# The README's OpenCV round trip compiles (syntax and types; it reads an image file, so it
# is not run: examples_c/opencv_pipeline.cpp runs the same steps).
mkdir -p build
# The README's ```cpp block that includes tensor_opencv.hpp (whatever its position).
awk '/^```cpp$/ {f = 1; b = ""; next} /^```$/ {if (f && b ~ /tensor_opencv\.hpp/) printf "%s", b; f = 0; next}
     f {b = b $0 "\n"}' README.md > build/readme_opencv_block.txt
test -s build/readme_opencv_block.txt || { echo "README: no cpp block includes tensor_opencv.hpp" >&2; false; }
{
  echo '#include <opencv2/imgcodecs.hpp>'
  grep '^#include' build/readme_opencv_block.txt
  echo 'int main() {'
  grep -v '^#include' build/readme_opencv_block.txt
  echo 'return green.empty() ? 1 : 0; }'
} > build/readme_opencv.cpp
# shellcheck disable=SC2046
run c++ -std=c++17 -fsyntax-only -Wall -Wextra -Werror -Iinclude $(pkg-config --cflags opencv4 | sed 's/-I/-isystem /g') \
  build/readme_opencv.cpp
echo "README OpenCV snippet: compiles"
