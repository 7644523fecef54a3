#!/bin/sh
# Prints the sizes the README quotes, measured on what `make` staged in build/lib: the
# shipped libraries, and the flagship example linked fully static (-static) as a consumer
# would link it, without and with -Wl,--gc-sections, unstripped and stripped. Fails if the
# static link prints a warning (glibc's NSS warnings among them).
#   make && sh cmake/sizes.sh
set -eu
cd "$(dirname "$0")/.."
lib=build/lib
version=$(sed -n 's/^version *= *"\([^"]*\)".*/\1/p' Cargo.toml | head -n 1)
[ -f "$lib/libtensor.a" ] || { echo "sizes.sh: run 'make' first" >&2; exit 1; }
deps=$(cat cmake/static-libs.txt)
out=build/sizes
mkdir -p "$out"
mb() { awk -v b="$(wc -c <"$1")" 'BEGIN { printf "%.1f MB", b / 1e6 }'; }
echo "libtensor $version, $(rustc --version), $(cc --version | head -n 1)"
echo "  libtensor.so.$version (stripped)      $(mb "$lib/libtensor.so.$version")"
echo "  libtensor.so.$version.debug           $(mb "$lib/libtensor.so.$version.debug")"
echo "  libtensor.a (with debug info)        $(mb "$lib/libtensor.a")"
for gc in "" "-Wl,--gc-sections"; do
  exe="$out/image_crop_static${gc:+_gc}"
  # shellcheck disable=SC2086
  cc -static -O2 -Iinclude examples_c/image_crop.c "$lib/libtensor.a" $deps $gc -o "$exe" \
    2>"$out/link.log"
  if [ -s "$out/link.log" ]; then
    cat "$out/link.log" >&2
    echo "sizes.sh: the static link warned" >&2
    exit 1
  fi
  "$exe" >/dev/null
  strip -o "$exe.stripped" "$exe"
  echo "  image_crop -static ${gc:-(no gc)}: $(mb "$exe") unstripped, $(mb "$exe.stripped") stripped"
done
