#!/usr/bin/env bash
# The boundary, re-proven on every change: sanitizers, ThreadSanitizer, Miri,
# allocation-failure injection, fuzzing and the ABI guard.
#   bash .ci/prove.sh                 every step
#   bash .ci/prove.sh abi asan tsan   only those steps (abi cusan asan tsan miri oom fuzz)
# Steps:
#   abi    python3 .ci/abi.py check: the exported ABI against .ci/abi_baseline.txt
#   cusan  the C/C++ tests built with -fsanitize=address,undefined against libtensor.so
#          (only where asan cannot run: asan runs the same C tests, with the same flags,
#          against an instrumented library, a superset)
#   asan   nightly: the library built with -Zsanitizer=address; its unit tests, and the C
#          tests (-fsanitize=address,undefined) against that instrumented libtensor.so
#          Both run with the default cache configuration (TENSOR_NO_CACHING unset): the
#          per-thread caches step aside for ASan on their own, and a planted use after
#          release (.ci/planted_use_after_release.c) must be stopped and reported.
#   tsan   nightly + rust-src: std and the library built with -Zsanitizer=thread
#          (-Zbuild-std: a std without TSan instrumentation reports false races on its own
#          atomics); c_tests/test_threads.c and test_thread_race.c with -fsanitize=thread
#   miri   nightly + miri: refcount, storage, DLPack and copy-engine unit tests under Miri
#   oom    tests/alloc_failure.rs: every allocation of a scripted call sequence failed in turn
#   fuzz   .ci/fuzz.sh: every target of fuzz/Cargo.toml for FUZZ_SECONDS (default 30) each
# Nightly steps print a notice and are skipped when the nightly toolchain (or a component)
# cannot be installed; every other failure fails the script.
set -Eeuo pipefail
cd "$(dirname "$0")/.."

TARGET=$(rustc -vV | sed -n 's/^host: //p')
STEPS=("$@")
[ ${#STEPS[@]} -gt 0 ] || STEPS=(abi cusan asan tsan miri oom fuzz)
SKIPPED=()

. .ci/lib.sh
# The C tests that churn handles and small blocks the most: run again with the per-thread
# caches kept on under ASan and valgrind (TENSOR_NO_CACHING=0), so the caches' own code is
# checked too.
CACHE_HEAVY=test_core,test_views,test_memory,test_threads,test_released

have_nightly() { # have_nightly [component...]: installs them; false (with a notice) if not
  if ! command -v rustup >/dev/null; then
    return 1
  fi
  if ! rustup run nightly rustc --version >/dev/null 2>&1; then
    echo "installing the nightly toolchain"
    rustup toolchain install nightly --profile minimal >/dev/null 2>&1 || return 1
  fi
  local c
  for c in "$@"; do
    if ! rustup +nightly component list --installed 2>/dev/null | grep -q "^$c"; then
      echo "rustup +nightly component add $c"
      rustup +nightly component add "$c" >/dev/null 2>&1 || return 1
    fi
  done
}

skip() {
  echo "NOTICE: step '$1' SKIPPED: $2"
  SKIPPED+=("$1")
}

step_abi() {
  run cargo build --quiet
  run python3 .ci/abi.py check
}

# planted_use_after_release LIBDIR: builds .ci/planted_use_after_release.c with
# -fsanitize=address against LIBDIR/libtensor.so and runs it with the default caches; it
# must abort (SIGABRT) with the library's report naming tensor_release and ASan's account of
# where the block was freed (which ASan has only if the object cache stepped aside).
planted_use_after_release() {
  local lib=$1 exe=$1/../planted_use_after_release out rc=0
  run cc -std=c99 -g -O1 -fsanitize=address -fno-omit-frame-pointer -Wall -Wextra -Werror \
    -Iinclude .ci/planted_use_after_release.c -o "$exe" -L"$lib" -Wl,-rpath,"$PWD/$lib" -ltensor
  out=$(env -u TENSOR_NO_CACHING ASAN_OPTIONS=detect_leaks=0:fast_unwind_on_malloc=0 "$exe" 2>&1) ||
    rc=$?
  echo "$out"
  if [ "$rc" -ne 134 ]; then
    echo "planted use after release: exit status $rc, expected 134 (SIGABRT)"
    return 1
  fi
  if ! grep -q "^libtensor: tensor_release: handle 0x[0-9a-f]* was already released" <<<"$out" ||
    ! grep -q "freed by thread" <<<"$out"; then
    echo "planted use after release: the library's report or ASan's 'freed by' account is missing"
    return 1
  fi
  echo "planted use after release: stopped and reported"
}

step_cusan() {
  if [[ " ${STEPS[*]} " == *" asan "* ]] && have_nightly rust-src; then
    echo "cusan: covered by asan (the same C tests and flags against an instrumented library)"
    return
  fi
  run env -u TENSOR_NO_CACHING TENSOR_SANITIZE=address,undefined cargo test --test c_api -- --nocapture
  # The caches step aside under ASan by default; their own code runs under it too, kept on.
  run env TENSOR_NO_CACHING=0 TENSOR_C_ONLY="$CACHE_HEAVY" TENSOR_SANITIZE=address,undefined \
    cargo test --test c_api c_and_cpp_programs_pass -- --nocapture
  planted_use_after_release "${CARGO_TARGET_DIR:-target}/debug/c_tests/lib"
}

step_asan() {
  if ! have_nightly rust-src; then
    skip asan "the nightly toolchain is not installable here"
    return
  fi
  # The C programs link gcc's libasan; the instrumented library resolves the __asan_*
  # symbols from it (rustc links its own ASan runtime only into executables).
  local asan=(RUSTFLAGS="-Zsanitizer=address -Cforce-frame-pointers=yes"
    RUSTDOCFLAGS="-Zsanitizer=address" CARGO_TARGET_DIR=target/asan
    TENSOR_SANITIZE=address,undefined ASAN_OPTIONS=allocator_may_return_null=1:detect_leaks=1)
  run env -u TENSOR_NO_CACHING "${asan[@]}" \
    cargo +nightly test --target "$TARGET" --lib --test c_api -- --nocapture
  # The caches' own code under ASan too, kept on, in the tests that churn them most.
  run env TENSOR_NO_CACHING=0 TENSOR_C_ONLY="$CACHE_HEAVY" "${asan[@]}" \
    cargo +nightly test --target "$TARGET" --test c_api c_and_cpp_programs_pass -- --nocapture
  planted_use_after_release "target/asan/$TARGET/debug/c_tests/lib"
}

step_tsan() {
  if ! have_nightly rust-src; then
    skip tsan "the nightly toolchain or its rust-src component is not installable here"
    return
  fi
  run env RUSTFLAGS="-Zsanitizer=thread -Cforce-frame-pointers=yes" CARGO_TARGET_DIR=target/tsan \
    cargo +nightly build -Zbuild-std --target "$TARGET" --lib
  local lib=target/tsan/$TARGET/debug
  mkdir -p "$lib/tsan"
  cp "$lib/libtensor.so" "$lib/tsan/libtensor.so"
  ln -sf libtensor.so "$lib/tsan/libtensor.so.0"
  local t extra
  for t in test_threads test_thread_race; do
    extra=()
    [ "$t" = test_thread_race ] && extra=(-DROUNDS=2000) # valgrind's 60 rounds are few
    run cc -std=c99 -g -O1 -fsanitize=thread -D_POSIX_C_SOURCE=200809L "${extra[@]}" -Wall -Wextra -Werror \
      -Iinclude -Ic_tests "c_tests/$t.c" .ci/tsan_shim.c -o "$lib/tsan/$t" -L"$lib/tsan" \
      -Wl,-rpath,"$PWD/$lib/tsan" -ltensor -lpthread
    run env TSAN_OPTIONS="halt_on_error=1 second_deadlock_stack=1" "$lib/tsan/$t"
  done
}

step_miri() {
  if ! have_nightly miri rust-src; then
    skip miri "the nightly toolchain or its miri component is not installable here"
    return
  fi
  run cargo +nightly miri setup
  # Unit tests of the reference counts, storages (and their boxes' slack alignment), DLPack,
  # the copy engine's scalar paths, and snapshots racing views (about a minute); tests
  # that call into libc or take minutes under Miri are #[cfg_attr(miri, ignore)].
  # The copy tests that sweep every dtype pair or big tensors take minutes under Miri: the
  # scalar paths are covered by the smaller ones listed.
  run env CARGO_TARGET_DIR=target/miri \
    cargo +nightly miri test --lib -- refcount:: storage:: allocator::system::box_tests \
    dlpack:: copy::engine:: \
    copy::tests::bool_copies copy::tests::copy_with_overlapping copy::tests::copy_between_storages \
    copy::tests::in_place_errors copy::tests::write_checks copy::tests::equal_on_the_same \
    copy::tests::repeat_matches copy::tests::copy_broadcasts \
    copy::float_int::tests::every_pair_on_a_sample copy::float_int::tests::baseline_float \
    snapshot::tests::concurrent_views_and_snapshots
}

step_oom() {
  run cargo test --test alloc_failure -- --nocapture
}

step_fuzz() {
  if ! have_nightly rust-src; then
    skip fuzz "the nightly toolchain is not installable here"
    return
  fi
  run bash .ci/fuzz.sh "${FUZZ_SECONDS:-30}"
}

for s in "${STEPS[@]}"; do
  echo
  echo "---- prove: $s"
  t0=$(date +%s)
  "step_$s"
  echo "---- prove: $s done in $(($(date +%s) - t0)) s"
done
if [ ${#SKIPPED[@]} -gt 0 ]; then
  echo "prove: passed, SKIPPED: ${SKIPPED[*]}"
else
  echo "prove: all steps passed (${STEPS[*]})"
fi
