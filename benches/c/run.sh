#!/bin/sh
# Builds libtensor.so (release) and the C benchmarks against it, then runs them.
# The library is copied into target/bench-c/ with its SONAME link (libtensor.so.0), so the
# programs run against exactly the build they were linked with.
# Usage: benches/c/run.sh [views|copy|bigclone|pipe|norm|convert|yuv|small|snapshot|contention|all|torch|torch-convert]
#   (default: all;
#   torch, not in all: the view ops, the float8 conversions and the big clones against
#   libtorch from the CI venv's torch wheel; torch-convert: only the conversions)
#   bench_big_clone takes optional [rounds]: BENCH_BIG_CLONE_ARGS=5
#   bench_pipe (C++) adds the cv::dnn::blobFromImage rows when pkg-config finds opencv4.
#   bench_yuv (FFmpeg's libswscale) takes optional [rounds [cold|warm [rows]]]: BENCH_YUV_ARGS="31 warm c"
#   bench_norm takes optional [rounds [self|alt]]: BENCH_NORM_ARGS=31
#   bench_views takes optional [iters_per_round [rounds]]: BENCH_VIEWS_ARGS="20000 101"
set -eu
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
cargo build --release --lib
dir="$root/target/bench-c"
mkdir -p "$dir"
cp -f target/release/libtensor.so "$dir/libtensor.so"
ln -sf libtensor.so "$dir/libtensor.so.0"
# build NAME [extra cc arguments]
build() {
  name=$1
  shift
  ${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -I"$root/include" "benches/c/$name.c" "$@" \
    -L"$dir" -Wl,-rpath,"$dir" -ltensor -lpthread -o "$dir/$name"
}
which=${1:-all}
if [ "$which" = views ] || [ "$which" = all ]; then
  # The retain + release floors: a shared library of their own (calls through the PLT).
  ${CC:-cc} -std=c99 -O2 -Wall -Wextra -Werror -fPIC -shared benches/c/floor_rc.c \
    -o "$dir/libbench_floor.so"
  build bench_views -Ibenches/c -L"$dir" -lbench_floor
  # shellcheck disable=SC2086
  "$dir/bench_views" ${BENCH_VIEWS_ARGS:-}
fi
if [ "$which" = copy ] || [ "$which" = all ]; then
  build bench_copy
  "$dir/bench_copy"
fi
if [ "$which" = bigclone ] || [ "$which" = all ]; then
  ${CXX:-c++} -std=c++17 -O2 -DNDEBUG -Wall -Wextra -Werror -I"$root/include" benches/c/bench_big_clone.cpp \
    -L"$dir" -Wl,-rpath,"$dir" -ltensor -o "$dir/bench_big_clone"
  # shellcheck disable=SC2086
  "$dir/bench_big_clone" ${BENCH_BIG_CLONE_ARGS:-}
fi
if [ "$which" = pipe ] || [ "$which" = all ]; then
  cv_flags=""
  if pkg-config --exists opencv4 2>/dev/null; then
    cv_flags="-DWITH_OPENCV_DNN $(pkg-config --cflags opencv4) -lopencv_dnn -lopencv_core"
  else
    echo "opencv4 not found by pkg-config: bench_pipe runs without the blobFromImage rows"
  fi
  # shellcheck disable=SC2086
  ${CXX:-c++} -std=c++17 -O2 -DNDEBUG -Wall -Wextra -Werror -I"$root/include" benches/c/bench_pipe.cpp \
    -L"$dir" -Wl,-rpath,"$dir" -ltensor $cv_flags -o "$dir/bench_pipe"
  # shellcheck disable=SC2086
  "$dir/bench_pipe" ${BENCH_PIPE_ARGS:-}
fi
if [ "$which" = norm ] || [ "$which" = all ]; then
  # Built at -O3 -march=native: the hand-written loop it compares with is compiled so
  # (-std=c99: no FMA contraction, the same two float32 roundings as copy_affine_).
  ${CC:-cc} -std=c99 -O3 -march=native -Wall -Wextra -Werror -I"$root/include" benches/c/bench_norm.c \
    -L"$dir" -Wl,-rpath,"$dir" -ltensor -o "$dir/bench_norm"
  # shellcheck disable=SC2086
  "$dir/bench_norm" ${BENCH_NORM_ARGS:-}
fi
if [ "$which" = convert ] || [ "$which" = all ]; then
  build bench_convert
  "$dir/bench_convert"
fi
if [ "$which" = yuv ] || [ "$which" = all ]; then
  # Built at -O3 -march=native: the hand-written loop it compares with is compiled so.
  if pkg-config --exists libswscale libavutil 2>/dev/null; then
    # shellcheck disable=SC2046
    ${CC:-cc} -std=c99 -O3 -march=native -Wall -Wextra -Werror -I"$root/include" benches/c/bench_yuv.c \
      $(pkg-config --cflags libswscale libavutil) -L"$dir" -Wl,-rpath,"$dir" -ltensor \
      $(pkg-config --libs libswscale libavutil) -o "$dir/bench_yuv"
    # shellcheck disable=SC2086
    "$dir/bench_yuv" ${BENCH_YUV_ARGS:-}
  else
    echo "libswscale not found by pkg-config (apt-get install libswscale-dev): bench_yuv skipped"
  fi
fi
if [ "$which" = small ] || [ "$which" = all ]; then
  build bench_small
  "$dir/bench_small"
fi
if [ "$which" = snapshot ] || [ "$which" = all ]; then
  build bench_snapshot
  # shellcheck disable=SC2086
  "$dir/bench_snapshot" ${BENCH_SNAPSHOT_ARGS:-}
fi
if [ "$which" = torch ] || [ "$which" = torch-convert ]; then
  # Not part of "all": needs torch from PyPI (the CI venv: see BENCHMARKS.md), whose wheel
  # ships libtorch's C++ headers and libraries.
  py=${TORCH_PYTHON:-$HOME/.cache/libtensor-ci-venv/bin/python}
  tdir=$("$py" -c 'import os, torch; print(os.path.dirname(torch.__file__))')
  tver=$("$py" -c 'import torch; print(torch.__version__)')
  abi=$("$py" -c 'import torch; print(int(torch._C._GLIBCXX_USE_CXX11_ABI))')
  build_torch() {
    ${CXX:-c++} -std=c++20 -O2 -DNDEBUG -D_GLIBCXX_USE_CXX11_ABI="$abi" -DTORCH_VER="\"$tver\"" \
      -I"$root/include" -I"$tdir/include" "benches/c/$1.cpp" \
      -L"$dir" -Wl,-rpath,"$dir" -ltensor -L"$tdir/lib" -Wl,-rpath,"$tdir/lib" -ltorch_cpu -lc10 \
      -o "$dir/$1"
  }
  if [ "$which" = torch ]; then
    build_torch bench_torch_views
    # shellcheck disable=SC2086
    "$dir/bench_torch_views" ${BENCH_TORCH_ARGS:-}
  fi
  build_torch bench_torch_convert
  # shellcheck disable=SC2086
  "$dir/bench_torch_convert" ${BENCH_TORCH_CONVERT_ARGS:-}
  if [ "$which" = torch ]; then
    ${CXX:-c++} -std=c++20 -O2 -DNDEBUG -DWITH_TORCH -D_GLIBCXX_USE_CXX11_ABI="$abi" \
      -I"$root/include" -I"$tdir/include" benches/c/bench_big_clone.cpp \
      -L"$dir" -Wl,-rpath,"$dir" -ltensor -L"$tdir/lib" -Wl,-rpath,"$tdir/lib" -ltorch_cpu -lc10 \
      -o "$dir/bench_big_clone_torch"
    # shellcheck disable=SC2086
    "$dir/bench_big_clone_torch" ${BENCH_BIG_CLONE_ARGS:-}
  fi
fi
if [ "$which" = contention ] || [ "$which" = all ]; then
  build bench_contention
  "$dir/bench_contention"
fi
