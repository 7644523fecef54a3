#!/bin/sh
# libtensor's installation: what `make install` / `make uninstall` (Makefile) and
# `cmake --install` (cmake/TensorInstall.cmake) run, so that both install the same files:
#   LIBDIR/libtensor.so.VERSION (stripped, 755), libtensor.so.MAJOR and libtensor.so (symlinks),
#   LIBDIR/libtensor.so.VERSION.debug (unless INSTALL_DEBUG=0), LIBDIR/libtensor.a,
#   INCLUDEDIR/libtensor/<each header of cmake/headers.txt>, LIBDIR/pkgconfig/tensor.pc,
#   LIBDIR/cmake/tensor/tensorConfig.cmake, tensorConfigVersion.cmake
# With TENSOR_AOTI=1 (environment; `make install WITH_AOTI=1`, CMake's TENSOR_AOTI) also the
# AOTInductor runtime `make aoti` staged: LIBDIR/libtensor_aoti.so.AOTI_VERSION (+ .debug,
# .so.MAJOR, .so, as libtensor's), INCLUDEDIR/libtensor/tensor_aoti.h, tensor_aoti.hpp,
# LIBDIR/pkgconfig/tensor_aoti.pc, LIBDIR/cmake/tensor/tensorAotiTargets.cmake (tensor::aoti),
# PREFIX/share/libtensor/python/tensor_aoti_compile.py (the compile recipe).
# `uninstall` removes them whether or not they were installed.
# It never builds: STAGE is the directory cmake/stage.sh filled.
#
#   sh cmake/install.sh install   STAGE VERSION PREFIX LIBDIR INCLUDEDIR
#   sh cmake/install.sh uninstall STAGE VERSION PREFIX LIBDIR INCLUDEDIR
#   sh cmake/install.sh configure OUT_DIR VERSION PREFIX LIBDIR INCLUDEDIR
#                                  only writes tensor.pc and the CMake package into OUT_DIR (Meson)
#   sh cmake/install.sh cmake-static-libs
#                                  cmake/static-libs.txt as CMake link items (TensorCargo.cmake)
# LIBDIR and INCLUDEDIR are relative to PREFIX or absolute, as GNUInstallDirs has them (lib64,
# lib/x86_64-linux-gnu); tensor.pc and tensorConfig.cmake name them relative to the prefix
# when they are inside it, so the CMake package stays relocatable. DESTDIR (environment) stages
# the install. `install` prints every file it installed, one a line (CMake's install manifest).
set -eu
here=$(cd "$(dirname "$0")" && pwd)
root=$(dirname "$here")
headers=$(cat "$here/headers.txt")
aoti_headers='tensor_aoti.h tensor_aoti.hpp'
# libtensor_aoti's version: aoti/Cargo.toml's (its SONAME is libtensor_aoti.so.MAJOR).
aoti_version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' "$root/aoti/Cargo.toml" | head -n 1)

# The static library's native libraries (cmake/static-libs.txt) as CMake names them: its
# targets for the thread and dl libraries first, then the others in name order; libc goes
# without saying.
cmake_static_libs() {
  threads='' dl='' rest=''
  for l in $(cat "$here/static-libs.txt"); do
    case $l in
      -lpthread) threads='Threads::Threads' ;;
      # shellcheck disable=SC2016 # (CMake's variable, for CMake to expand)
      -ldl) dl='${CMAKE_DL_LIBS}' ;;
      -lc) ;;
      -l*) rest="$rest ${l#-l}" ;;
      *) echo "install.sh: '$l' in cmake/static-libs.txt is not -lNAME" >&2; exit 1 ;;
    esac
  done
  # shellcheck disable=SC2086
  printf '%s\n' $threads $dl $(printf '%s\n' $rest | LC_ALL=C sort) | paste -sd ';' -
}

# setup VERSION PREFIX LIBDIR INCLUDEDIR: the directories, absolute and as the files name them.
setup() {
  version=$1 prefix=$2
  major=${version%%.*}
  case $3 in /*) abs_lib=$3 ;; *) abs_lib=$prefix/$3 ;; esac
  case $4 in /*) abs_inc=$4 ;; *) abs_inc=$prefix/$4 ;; esac
  case $abs_lib in "$prefix"/*) rel_lib=${abs_lib#"$prefix"/} ;; *) rel_lib=$abs_lib ;; esac
  case $abs_inc in "$prefix"/*) rel_inc=${abs_inc#"$prefix"/} ;; *) rel_inc=$abs_inc ;; esac
  lib_dest=${DESTDIR:-}$abs_lib
  inc_dest=${DESTDIR:-}$abs_inc/libtensor
  share_dest=${DESTDIR:-}$prefix/share/libtensor
}

# path_in VAR DIR: DIR as a file names it, ${VAR}/DIR when relative.
path_in() { case $2 in /*) echo "$2" ;; *) echo "\${$1}/$2" ;; esac; }

# configure OUT_DIR: tensor.pc, tensorConfig.cmake, tensorConfigVersion.cmake from the templates.
configure() {
  out=$1
  mkdir -p "$out"
  # From LIBDIR/cmake/tensor back up to the prefix: one ".." per directory.
  to_prefix=$(echo "$rel_lib/cmake/tensor" | sed 's|[^/][^/]*|..|g')
  sed -e "s|@PC_PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" \
      -e "s|@PC_LIBDIR@|$(path_in prefix "$rel_lib")|g" \
      -e "s|@PC_INCLUDEDIR@|$(path_in prefix "$rel_inc")|g" \
      -e "s|@STATIC_DEPS@|$(cat "$here/static-libs.txt")|g" "$here/tensor.pc.in" >"$out/tensor.pc"
  sed -e "s|@VERSION@|$version|g" -e "s|@SOMAJOR@|$major|g" -e "s|@CONFIG_TO_PREFIX@|$to_prefix|g" \
      -e "s|@CONFIG_LIBDIR@|$(path_in _tensor_prefix "$rel_lib")|g" \
      -e "s|@CONFIG_INCLUDEDIR@|$(path_in _tensor_prefix "$rel_inc")|g" \
      -e "s|@CONFIG_STATIC_LIBS@|$(cmake_static_libs)|g" \
      "$here/tensorConfig.cmake.in" >"$out/tensorConfig.cmake"
  sed -e "s|@VERSION@|$version|g" "$here/tensorConfigVersion.cmake.in" >"$out/tensorConfigVersion.cmake"
  sed -e "s|@PC_PREFIX@|$prefix|g" -e "s|@VERSION@|$version|g" -e "s|@AOTI_VERSION@|$aoti_version|g" \
      -e "s|@PC_LIBDIR@|$(path_in prefix "$rel_lib")|g" \
      -e "s|@PC_INCLUDEDIR@|$(path_in prefix "$rel_inc")|g" "$here/tensor_aoti.pc.in" >"$out/tensor_aoti.pc"
  sed -e "s|@AOTI_VERSION@|$aoti_version|g" -e "s|@AOTI_SOMAJOR@|${aoti_version%%.*}|g" \
      -e "s|@CONFIG_LIBDIR@|$(path_in _tensor_prefix "$rel_lib")|g" \
      "$here/tensorAotiTargets.cmake.in" >"$out/tensorAotiTargets.cmake"
}

# put MODE SRC DEST: installs one file and prints its path.
put() { install -m "$1" "$2" "$3"; echo "$3"; }

# put_so STAGE NAME VERSION: NAME.so.VERSION (stripped by stage.sh), its .debug (unless
# INSTALL_DEBUG=0), the NAME.so.MAJOR and NAME.so symlinks.
put_so() {
  so=$2.so.$3
  put 755 "$1/$so" "$lib_dest/$so"
  if [ "${INSTALL_DEBUG:-1}" = 1 ]; then put 644 "$1/$so.debug" "$lib_dest/$so.debug"; fi
  ln -sf "$so" "$lib_dest/$2.so.${3%%.*}" && echo "$lib_dest/$2.so.${3%%.*}"
  ln -sf "$2.so.${3%%.*}" "$lib_dest/$2.so" && echo "$lib_dest/$2.so"
}

# rm_so NAME VERSION: what put_so installed.
rm_so() {
  rm -f "$lib_dest/$1.so.$2" "$lib_dest/$1.so.$2.debug" "$lib_dest/$1.so.${2%%.*}" "$lib_dest/$1.so"
}

do_install() {
  stage=$1
  so=libtensor.so.$version
  if [ ! -f "$stage/$so" ] || [ ! -f "$stage/libtensor.a" ]; then
    echo "install.sh: nothing is built in $stage/ (libtensor $version)" >&2
    exit 1
  fi
  aoti=${TENSOR_AOTI:-0}
  if [ "$aoti" = 1 ] && [ ! -f "$stage/libtensor_aoti.so.$aoti_version" ]; then
    echo "install.sh: TENSOR_AOTI=1 but libtensor_aoti $aoti_version is not built in $stage/ (make aoti)" >&2
    exit 1
  fi
  install -d "$lib_dest/pkgconfig" "$lib_dest/cmake/tensor" "$inc_dest"
  put_so "$stage" libtensor "$version"
  put 644 "$stage/libtensor.a" "$lib_dest/libtensor.a"
  for h in $headers; do put 644 "$root/include/$h" "$inc_dest/$h"; done
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  configure "$tmp"
  put 644 "$tmp/tensor.pc" "$lib_dest/pkgconfig/tensor.pc"
  put 644 "$tmp/tensorConfig.cmake" "$lib_dest/cmake/tensor/tensorConfig.cmake"
  put 644 "$tmp/tensorConfigVersion.cmake" "$lib_dest/cmake/tensor/tensorConfigVersion.cmake"
  if [ "$aoti" = 1 ]; then
    put_so "$stage" libtensor_aoti "$aoti_version"
    for h in $aoti_headers; do put 644 "$root/include/$h" "$inc_dest/$h"; done
    put 644 "$tmp/tensor_aoti.pc" "$lib_dest/pkgconfig/tensor_aoti.pc"
    put 644 "$tmp/tensorAotiTargets.cmake" "$lib_dest/cmake/tensor/tensorAotiTargets.cmake"
    install -d "$share_dest/python"
    put 644 "$root/aoti/python/tensor_aoti_compile.py" "$share_dest/python/tensor_aoti_compile.py"
  fi
}

do_uninstall() {
  rm_so libtensor "$version"
  rm_so libtensor_aoti "$aoti_version"
  rm -f "$lib_dest/libtensor.a" "$lib_dest/pkgconfig/tensor.pc" "$lib_dest/cmake/tensor/tensorConfig.cmake" \
    "$lib_dest/cmake/tensor/tensorConfigVersion.cmake" "$lib_dest/pkgconfig/tensor_aoti.pc" \
    "$lib_dest/cmake/tensor/tensorAotiTargets.cmake"
  for h in $headers $aoti_headers; do rm -f "$inc_dest/$h"; done
  rm -f "$share_dest/python/tensor_aoti_compile.py"
  rmdir "$lib_dest/cmake/tensor" "$inc_dest" "$share_dest/python" "$share_dest" 2>/dev/null || true
}

usage() { sed -n '15,20p' "$0" >&2; exit 2; }
[ $# -ge 1 ] || usage
cmd=$1
shift
case $cmd in
  cmake-static-libs) [ $# = 0 ] || usage; cmake_static_libs ;;
  install | uninstall | configure)
    [ $# = 5 ] || usage
    setup "$2" "$3" "$4" "$5"
    case $cmd in
      install) do_install "$1" ;;
      uninstall) do_uninstall ;;
      configure) configure "$1" ;;
    esac ;;
  *) usage ;;
esac
