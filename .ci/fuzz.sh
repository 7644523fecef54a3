#!/usr/bin/env bash
# Fuzzes every target of fuzz/Cargo.toml ([[bin]] stanzas) for a bounded time, starting from
# its committed seed corpus fuzz/corpus/<target>/ and the campaign corpus
# fuzz/target/corpus/<target>/ (untracked, kept between runs: new inputs go there, so the
# repository is never modified; a long campaign grows it back from the seeds).
#   bash .ci/fuzz.sh [seconds-per-target] [target...]
#   FUZZ_RUNS=N bash .ci/fuzz.sh 0 c_api      a number of executions instead of a time
#   FUZZ_JOBS=2 ...                            parallel fuzzing jobs per target
#   FUZZ_PARALLEL=N ...                        targets fuzzed at once (default: the cores)
#   FUZZ_MINIMIZE=1 bash .ci/fuzz.sh 0 [target...]
#       no fuzzing: rewrites each seed corpus as a greedy edge cover of seeds + campaign corpus
#       (fuzz/minimize.py over one run of every input: few inputs that reach every edge those
#       reach), the hand-made seeds (files not named by their SHA-1, from
#       fuzz/make_file_seeds.py) kept; the campaign corpus is left as it is. Commit the seeds
#       it writes.
#
# Builds without cargo-fuzz (one compile less in CI): cargo +nightly with the flags
# cargo-fuzz 0.12 passes for `cargo fuzz build -O` with its default AddressSanitizer:
#   -Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4
#   -Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table
#   -Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address
#   -Cdebug-assertions -Coverflow-checks (release profile, debug info)
# `cargo install cargo-fuzz && cargo +nightly fuzz run c_api fuzz/target/corpus/c_api
# fuzz/corpus/c_api` is equivalent (both directories named: cargo-fuzz's default corpus,
# fuzz/corpus/c_api/, would receive the new inputs).
# A crash leaves its input in fuzz/artifacts/<target>/; reproduce it with
#   fuzz/target/<triple>/release/<target> fuzz/artifacts/<target>/crash-...
set -Eeuo pipefail
cd "$(dirname "$0")/.."

SECONDS_PER_TARGET=${1:-60}
shift || true
TRIPLE=$(rustc -vV | sed -n 's/^host: //p')
RUSTFLAGS_FUZZ="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares --cfg fuzzing -Zsanitizer=address \
-Cdebug-assertions -Coverflow-checks -Cforce-frame-pointers=yes"

if [ $# -gt 0 ]; then
  targets=("$@")
else
  mapfile -t targets < <(awk '/^\[\[bin\]\]/ {b = 1} b && /^name *=/ {gsub(/[" ]/, "", $0); sub(/name=/, ""); print; b = 0}' fuzz/Cargo.toml)
fi
[ ${#targets[@]} -gt 0 ] || { echo "fuzz: no [[bin]] targets in fuzz/Cargo.toml" >&2; exit 1; }

echo "+ RUSTFLAGS=\"$RUSTFLAGS_FUZZ\" cargo +nightly build --release --manifest-path fuzz/Cargo.toml --target $TRIPLE"
RUSTFLAGS="$RUSTFLAGS_FUZZ" cargo +nightly build --release --manifest-path fuzz/Cargo.toml \
  --target "$TRIPLE" --bins

# The library asks for absurd sizes on purpose (it must see NULL, not an abort); libFuzzer's
# own malloc limit would call those crashes, so it is set above ASan's largest allocation.
export ASAN_OPTIONS="allocator_may_return_null=1:detect_leaks=1:${ASAN_OPTIONS:-}"
# files and bytes of a directory's files
size_of() { find "$1" -maxdepth 1 -type f -printf '%s\n' | awk '{n++; b += $1} END {printf "%d files, %d bytes", n, b}'; }

# minimize TARGET BIN SEEDS WORK: rewrites SEEDS as the edge cover of SEEDS + WORK (see above).
# libFuzzer's own -set_cover_merge=1 picks the same kind of cover, but its pick rescans every
# input per input picked (hours for a campaign corpus); only its inner step is used here: one
# run of each input listed in the control file, each one's edges written after it.
minimize() {
  local t=$1 bin=$2 seeds=$3 work=$4 scratch=fuzz/target/minimize/$1
  rm -rf "$scratch"
  mkdir -p "$scratch"
  find "$seeds" "$work" -maxdepth 1 -type f | sort >"$scratch/inputs"
  { wc -l <"$scratch/inputs"; echo 0; cat "$scratch/inputs"; } >"$scratch/control"
  echo "+ $bin -merge_inner=2 -merge_control_file=$scratch/control -use_counters=0 -max_len=512 ($(wc -l <"$scratch/inputs") inputs of $seeds $work)"
  "$bin" -merge_inner=2 -merge_control_file="$scratch/control" -use_counters=0 -max_len=512 \
    -malloc_limit_mb=2000000 -rss_limit_mb=2048 >"$scratch.log" 2>&1 || {
    tail -n 30 "$scratch.log"
    echo "fuzz: minimizing $t FAILED (an input crashed? log $scratch.log)" >&2
    exit 1
  }
  python3 fuzz/minimize.py --max-len 512 "$scratch/control" "$scratch/seeds"
  echo "fuzz: $t seeds: $(size_of "$seeds") + campaign: $(size_of "$work") -> $(size_of "$scratch/seeds")"
  rm -rf "$seeds"
  mv "$scratch/seeds" "$seeds"
}

# fuzz_one TARGET: one target's campaign (its report on stdout); fails when it crashed.
fuzz_one() {
  local t=$1 bin=fuzz/target/$TRIPLE/release/$1 seeds=fuzz/corpus/$1 work=fuzz/target/corpus/$1
  local limit start log=fuzz/target/$1.log rc=0 jobs=()
  mkdir -p "$work" "fuzz/artifacts/$t"
  if [ ! -d "$seeds" ]; then
    echo "fuzz: NOTICE: no seed corpus $seeds for target $t: starting from an empty corpus"
    seeds=$work
  fi
  if [ -n "${FUZZ_MINIMIZE:-}" ]; then
    minimize "$t" "$bin" "$seeds" "$work"
    return
  fi
  if [ -n "${FUZZ_RUNS:-}" ]; then limit=(-runs="$FUZZ_RUNS"); else limit=(-max_total_time="$SECONDS_PER_TARGET"); fi
  echo "+ $bin ${limit[*]} (-jobs/-workers=\$FUZZ_JOBS if > 1) -malloc_limit_mb=2000000 -rss_limit_mb=2048 -max_len=512 -artifact_prefix=fuzz/artifacts/$t/ $work $seeds"
  start=$(date +%s)
  if [ "${FUZZ_JOBS:-1}" -gt 1 ]; then jobs=(-jobs="$FUZZ_JOBS" -workers="$FUZZ_JOBS"); fi
  "$bin" "${limit[@]}" "${jobs[@]}" -malloc_limit_mb=2000000 \
    -rss_limit_mb=2048 -max_len=512 -print_final_stats=1 -artifact_prefix="fuzz/artifacts/$t/" \
    "$work" "$seeds" >"$log" 2>&1 || rc=$?
  [ "${FUZZ_JOBS:-1}" -gt 1 ] && cat fuzz-*.log >>"$log" 2>/dev/null && rm -f fuzz-*.log
  grep -E "INITED|DONE|stat::|ERROR|ORACLE|SUMMARY|panicked|Test unit written" "$log" | tail -n 40 || true
  if [ "$rc" != 0 ]; then
    tail -n 60 "$log"
    echo "fuzz: target $t FAILED (exit $rc; input in fuzz/artifacts/$t/, full log $log)" >&2
    return 1
  fi
  echo "fuzz: $t clean after $(($(date +%s) - start)) s"
}

# Targets run side by side, FUZZ_PARALLEL at once (default: one per core; 1 with FUZZ_JOBS
# or FUZZ_MINIMIZE), each report printed whole when its batch is done.
parallel=${FUZZ_PARALLEL:-$(nproc)}
if [ "${FUZZ_JOBS:-1}" -gt 1 ] || [ -n "${FUZZ_MINIMIZE:-}" ]; then parallel=1; fi
failed=()
for ((i = 0; i < ${#targets[@]}; i += parallel)); do
  batch=("${targets[@]:i:parallel}")
  pids=()
  for t in "${batch[@]}"; do
    fuzz_one "$t" >"fuzz/target/$t.report" 2>&1 &
    pids+=($!)
  done
  for j in "${!batch[@]}"; do
    rc=0
    wait "${pids[j]}" || rc=$?
    cat "fuzz/target/${batch[j]}.report"
    [ "$rc" = 0 ] || failed+=("${batch[j]}")
  done
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "fuzz: FAILED: ${failed[*]}" >&2
  exit 1
fi
