#!/bin/sh
# meson.build's build step: cargo build of libtensor, then cmake/stage.sh into OUT_DIR (only
# when cargo produced a new libtensor.a or a staged file is missing; cargo itself decides what
# to rebuild).
# Usage: cargo_build.sh CARGO SOURCE_DIR OUT_DIR VERSION PROFILE TARGET_DIR default|set
#   TARGET_DIR  cargo's target directory; with "default", $CARGO_TARGET_DIR wins when set
set -eu
cargo=$1
src=$(cd "$2" && pwd -P) # (the real path: cargo reuses a build only for the same manifest path)
out=$(cd "$3" && pwd)
version=$4
profile=$5
if [ "$7" = set ] || [ -z "${CARGO_TARGET_DIR:-}" ]; then CARGO_TARGET_DIR=$6; fi
export CARGO_TARGET_DIR
case $profile in dev) dir=debug ;; *) dir=$profile ;; esac
# From the source directory, as make and CMake run it: cargo reads .cargo/config.toml (e.g. the
# source replacement of `cargo vendor`) from the working directory up.
cd "$src"
"$cargo" build --manifest-path "$src/Cargo.toml" --profile "$profile" --lib
archive=$CARGO_TARGET_DIR/$dir/libtensor.a
major=${version%%.*}
for f in libtensor.a "libtensor.so.$version" "libtensor.so.$version.debug" "libtensor.so.$major" libtensor.so; do
  if [ ! -e "$out/$f" ] || [ "$archive" -nt "$out/libtensor.a" ]; then
    sh "$src/cmake/stage.sh" "$archive" "$out" "$version"
    chmod 644 "$out/libtensor.so.$version.debug" # (as make install and cmake --install have it)
    exit 0
  fi
done
