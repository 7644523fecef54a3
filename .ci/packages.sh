#!/usr/bin/env bash
# CI step: the package managers' builds of libtensor, offline (docs/packaging.md):
#   1 Conan 2   conan create . (static, then shared) + test_package, with a CONAN_HOME of its
#               own that has no remote, cargo offline (CARGO_NET_OFFLINE=true)
#   2 Meson     packaging/test_meson/run.sh: meson install == make install; a consumer project
#               with subprojects/libtensor, dependency('tensor', fallback : ['libtensor']);
#               the wrap file's [provide] with default_library=static
# Installs conan, meson and ninja with pip into the CI venv (LIBTENSOR_CI_VENV, default
# ~/.cache/libtensor-ci-venv; created when missing). cargo builds into CARGO_TARGET_DIR
# (default: the checkout's target/), so the release dependencies built by the earlier steps
# are reused: Conan rebuilds only the tensor crate (from its cache's copy of the sources, in a
# copy of target/release; once for both packages), Meson nothing.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
. .ci/lib.sh
ci_venv
venv=$VENV
start=$(date +%s)
step_start=$start
took() { local now; now=$(date +%s); echo "    ($1: $((now - step_start)) s)"; step_start=$now; }

need=()
for tool in conan meson ninja; do [ -x "$venv/bin/$tool" ] || need+=("$tool"); done
if [ ${#need[@]} -gt 0 ]; then
  echo "+ pip install ${need[*]} (into $venv)"
  "$venv/bin/python" -m pip install -q --disable-pip-version-check "${need[@]}"
fi
export PATH="$venv/bin:$PATH"
echo "conan $(conan --version | sed 's/.* //'), meson $(meson --version), ninja $(ninja --version)"

export CARGO_TARGET_DIR="${CARGO_TARGET_DIR:-$root/target}"
# Everything cargo needs is fetched now (a no-op when the earlier steps did); then offline.
cargo fetch --locked --quiet
export CARGO_NET_OFFLINE=true
took "setup"

echo
echo "== Conan: conan create . (static, shared), no remote, cargo offline"
CONAN_HOME=$(mktemp -d)
export CONAN_HOME
trap 'rm -rf "$CONAN_HOME"' EXIT
# Conan builds the crate from its cache's copy of the sources. Not in the checkout's target
# directory: cargo files a path crate's build under the same names whatever its path (its
# fingerprint, build-script output, libtensor.a / .so / .rlib), so the two builds would
# overwrite each other's. A copy of the checkout's target/release instead: cargo reuses the
# dependencies in it and rebuilds only the tensor crate (once for both packages).
conan_target=$CONAN_HOME/cargo-target
mkdir -p "$conan_target"
if [ -d "$CARGO_TARGET_DIR/release" ]; then
  cp -a --reflink=auto "$CARGO_TARGET_DIR/release" "$conan_target/"
  took "a copy of $CARGO_TARGET_DIR/release for Conan's cargo"
fi
conan profile detect >/dev/null 2>&1
conan remote disable "*" >/dev/null
[ -z "$(conan remote list | grep -v 'Enabled: False' || true)" ] || { conan remote list; exit 1; }
for shared in False True; do
  log=$CONAN_HOME/create-$shared.log
  echo "+ conan create . --build=missing -o libtensor/*:shared=$shared"
  if ! CARGO_TARGET_DIR=$conan_target conan create . --build=missing -o "libtensor/*:shared=$shared" \
      >"$log" 2>&1; then
    cat "$log"
    echo "FAILED: conan create (shared=$shared)" >&2
    exit 1
  fi
  grep -E 'package OK' "$log"
  took "conan create shared=$shared"
done

echo
echo "== Meson: standalone install, subproject consumer, wrap file"
bash packaging/test_meson/run.sh
took "meson"
echo "packages: $(( $(date +%s) - start )) s"
