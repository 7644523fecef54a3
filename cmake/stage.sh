#!/bin/sh
# Turns the static library cargo built into the libraries libtensor ships, in OUT_DIR:
#   libtensor.a               one pre-linked object (ld -r) whose only global symbols are the
#                             public tensor_* / storage_*: Rust's standard library inside it is
#                             local, so it links beside other Rust static libraries
#   libtensor.so.VERSION      linked from that object with the SONAME libtensor.so.MAJOR and the
#                             version script cmake/tensor.map (every symbol @@TENSOR_0), stripped
#   libtensor.so.VERSION.debug  its debug info (found by gdb through .gnu_debuglink)
#   libtensor.so.MAJOR, libtensor.so   symlinks
# Used by `make release` and by the CMake build (cmake/TensorCargo.cmake), so both ship the
# same files. It never runs cargo.
#
# Usage: cmake/stage.sh CARGO_ARCHIVE OUT_DIR VERSION
#   CARGO_ARCHIVE  target/<profile>/libtensor.a from cargo
#        cmake/stage.sh aoti CARGO_CDYLIB OUT_DIR AOTI_VERSION
#   the AOTInductor runtime (`make aoti`): target/<profile>/libtensor_aoti.so (cargo links it
#   with the SONAME libtensor_aoti.so.MAJOR, aoti/build.rs) becomes
#   libtensor_aoti.so.AOTI_VERSION (+ .debug, stripped the same way), libtensor_aoti.so.MAJOR,
#   libtensor_aoti.so
# Tools (override for cross builds): CC, LD, AR, OBJCOPY, READELF; TENSOR_NATIVE_LIBS (the
# libraries the shared library links: by default `rustc --print native-static-libs`, which is
# -lgcc_s and cmake/static-libs.txt).
set -eu
archive=$1
out=$2
version=$3
major=${version%%.*}
here=$(cd "$(dirname "$0")" && pwd)
CC=${CC:-cc}
LD=${LD:-ld}
AR=${AR:-ar}
OBJCOPY=${OBJCOPY:-objcopy}
READELF=${READELF:-readelf}
# cmake/static-libs.txt is what a consumer of libtensor.a links; the shared library also names
# the unwinder, -lgcc_s, first (the C driver would add it only after them, as needed: the same
# library, but in another place in the .so's DT_NEEDED list). A consumer does not: `cc -static`
# finds no libgcc_s.a, and the driver adds the unwinder itself (libgcc_s, or with -static
# libgcc_eh).
TENSOR_NATIVE_LIBS=${TENSOR_NATIVE_LIBS:--lgcc_s $(cat "$here/static-libs.txt")}

# split_debug DIR LIB: LIB's debug info into DIR/LIB.debug; DIR/LIB keeps a .gnu_debuglink to it.
split_debug() {
  "$OBJCOPY" --only-keep-debug "$1/$2" "$1/$2.debug"
  "$OBJCOPY" --strip-debug --strip-unneeded "$1/$2"
  (cd "$1" && "$OBJCOPY" --add-gnu-debuglink="$2.debug" "$2")
}

# links OUT_DIR NAME VERSION: NAME.so.MAJOR -> NAME.so.VERSION, NAME.so -> NAME.so.MAJOR.
links() {
  ln -sf "$2.so.$3" "$1/$2.so.${3%%.*}"
  ln -sf "$2.so.${3%%.*}" "$1/$2.so"
}

if [ "$1" = aoti ]; then
  [ $# = 4 ] || { echo "usage: stage.sh aoti CARGO_CDYLIB OUT_DIR AOTI_VERSION" >&2; exit 2; }
  cdylib=$2 out=$3 aver=$4
  [ -f "$cdylib" ] || { echo "stage.sh: $cdylib does not exist (cargo build -p tensor_aoti)" >&2; exit 1; }
  soname=$("$READELF" -dW "$cdylib" | sed -n 's/.*(SONAME).*\[\(.*\)\]/\1/p')
  [ "$soname" = "libtensor_aoti.so.${aver%%.*}" ] ||
    { echo "stage.sh: $cdylib has SONAME '$soname', not libtensor_aoti.so.${aver%%.*}" >&2; exit 1; }
  mkdir -p "$out"
  tmp="$out/.stage-aoti.$$"
  rm -rf "$tmp" && mkdir -p "$tmp"
  trap 'rm -rf "$tmp"' EXIT
  cp "$cdylib" "$tmp/libtensor_aoti.so.$aver"
  split_debug "$tmp" "libtensor_aoti.so.$aver"
  mv -f "$tmp/libtensor_aoti.so.$aver" "$tmp/libtensor_aoti.so.$aver.debug" "$out/"
  links "$out" libtensor_aoti "$aver"
  echo "stage.sh: $out/libtensor_aoti.so.$aver (+ .debug, libtensor_aoti.so.${aver%%.*}, libtensor_aoti.so)"
  exit 0
fi

[ -f "$archive" ] || { echo "stage.sh: $archive does not exist (build the library first)" >&2; exit 1; }
mkdir -p "$out"
tmp="$out/.stage.$$"
rm -rf "$tmp"
mkdir -p "$tmp"
trap 'rm -rf "$tmp"' EXIT

# 1. One relocatable object holding every member, keeping only what the public API can reach
#    (--gc-sections rooted at the tensor_* / storage_* functions: Rust's std brings code the
#    library never calls, such as its networking and home_dir, whose glibc NSS references make
#    a -static link warn). Then every defined global symbol but the public API becomes local,
#    and the undefined symbols no remaining relocation uses are dropped (so the consumer's
#    link does not pull getaddrinfo / getpwuid_r out of libc.a for code that is gone).
"$READELF" -sW "$archive" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" {print $8}' \
  | grep -E '^(tensor|storage)_' | sort -u | sed 's/^/--require-defined=/' > "$tmp/roots.txt"
[ -s "$tmp/roots.txt" ] || { echo "stage.sh: no tensor_*/storage_* symbol in $archive" >&2; exit 1; }
"$LD" -r --gc-sections @"$tmp/roots.txt" --whole-archive "$archive" -o "$tmp/tensor.o"
# (readelf, not nm: nm crashes in the LLVM plugin some systems install for binutils)
"$READELF" -sW "$tmp/tensor.o" | awk '($5 == "GLOBAL" || $5 == "WEAK") && $7 != "UND" {print $8}' \
  | sort -u > "$tmp/defined.txt"
grep -E '^(tensor|storage)_' "$tmp/defined.txt" > "$tmp/public.txt" || true
# The others are also renamed (__libtensor_ prefix): a local symbol that names a COMDAT group
# (DW.ref.rust_eh_personality, ...) would otherwise still win the group against the same
# group in another Rust library, whose references to it would then stay undefined.
grep -vE '^(tensor|storage)_' "$tmp/defined.txt" | awk '{print $1, "__libtensor_" $1}' > "$tmp/rename.txt"
"$READELF" -sW "$tmp/tensor.o" | awk '$7 == "UND" && $8 != "" {print $8}' | sort -u > "$tmp/undefined.txt"
"$READELF" -rW "$tmp/tensor.o" | awk 'NF >= 5 && $1 ~ /^[0-9a-f]+$/ {print $5}' | sed 's/@.*//' \
  | sort -u > "$tmp/referenced.txt"
comm -23 "$tmp/undefined.txt" "$tmp/referenced.txt" | sed 's/^/--strip-symbol=/' > "$tmp/unused.txt"
# The .llvmbc/.llvmcmd sections (bitcode Rust embeds for LTO) are dropped: merged by ld -r
# they are no longer valid bitcode, and LLVM-based tools (the LLVMgold plugin of nm/ar) abort.
"$OBJCOPY" @"$tmp/unused.txt" --redefine-syms="$tmp/rename.txt" --keep-global-symbols="$tmp/public.txt" \
  --remove-section=.llvmbc --remove-section=.llvmcmd \
  "$tmp/tensor.o" "$tmp/libtensor.o"
rm -f "$tmp/libtensor.a"
"$AR" rcs "$tmp/libtensor.a" "$tmp/libtensor.o"

# 2. The shared library from the same object, with symbol versions.
lib="libtensor.so.$version"
# shellcheck disable=SC2086
"$CC" -shared -o "$tmp/$lib" -Wl,--whole-archive "$tmp/libtensor.a" -Wl,--no-whole-archive \
  -Wl,-soname,"libtensor.so.$major" -Wl,--version-script="$here/tensor.map" -Wl,--gc-sections \
  -Wl,-z,relro -Wl,-z,now $TENSOR_NATIVE_LIBS

# 3. Debug info into its own file; the library keeps a .gnu_debuglink to it.
split_debug "$tmp" "$lib"

mv -f "$tmp/libtensor.a" "$tmp/$lib" "$tmp/$lib.debug" "$out/"
links "$out" libtensor "$version"
echo "stage.sh: $out/libtensor.a, $out/$lib (+ .debug, libtensor.so.$major, libtensor.so)"
