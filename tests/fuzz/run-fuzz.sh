#!/usr/bin/env bash
# Builds the fuzzers (the trace reader's, the XSpace importer's, the Chrome
# trace JSON importer's, the job doctor's journal reader's) and their seeds in BUILD_DIR (configured with clang
# and -DPODSCOPE_BUILD_FUZZ=ON), then fuzzes each for SECONDS on a copy of
# its seed corpus (plus tests/fuzz/regressions/NAME/, inputs that once
# found a problem). Exits non-zero when the fuzzer finds a crash, leak,
# timeout or sanitizer report; the input that caused it is kept in
# BUILD_DIR/fuzz-artifacts/. NAME... (reader, xspace, chrome_json, journal) picks
# fuzzers, all by default; JOBS sets the build's parallelism. The reader's
# run is followed by as long again on hostile files of 1-64 MiB
# (reader_large_inputs), each run once through the reader fuzzer, whose
# timeout and memory limit then stand for linear work and bounded memory at
# sizes -max_len cannot reach.
#
#   tests/fuzz/run-fuzz.sh build-fuzz 60
#   JOBS=1 tests/fuzz/run-fuzz.sh build-fuzz 60 chrome_json
set -euo pipefail

if [[ $# -lt 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS [NAME...]" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
seconds=$2
shift 2
names=("$@")
if [[ ${#names[@]} -eq 0 ]]; then names=(reader xspace chrome_json journal); fi
targets=()
for name in "${names[@]}"; do
  case "$name" in
    reader) targets+=(reader_fuzzer reader_fuzz_seeds reader_large_inputs) ;;
    xspace | chrome_json) targets+=("${name}_fuzzer" "${name}_fuzz_seeds") ;;
    # Its seeds are files in tests/fuzz/journal_seeds/.
    journal) targets+=(journal_fuzzer) ;;
    *) echo "run-fuzz: unknown fuzzer '$name'" >&2; exit 2 ;;
  esac
done

cmake --build "$build_dir" ${JOBS:+-j "$JOBS"} --target "${targets[@]}"

fuzz_bin="$build_dir/tests/fuzz"
artifacts="$build_dir/fuzz-artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts"

# run_fuzzer NAME: fuzzes NAME_fuzzer for $seconds on NAME_fuzz_seeds' corpus.
failed=0
run_fuzzer() {
  local name=$1
  local seeds="$build_dir/fuzz-seeds/$name"
  mkdir -p "$work/$name/corpus"
  if [[ -x "$fuzz_bin/${name}_fuzz_seeds" ]]; then
    "$fuzz_bin/${name}_fuzz_seeds" "$seeds"
  else
    seeds="$(dirname "$0")/${name}_seeds"
  fi
  cp "$seeds"/* "$work/$name/corpus/"
  # Inputs that once found a problem stay in every run's corpus.
  local regressions
  regressions="$(dirname "$0")/regressions/$name"
  if [[ -d "$regressions" ]]; then cp "$regressions"/* "$work/$name/corpus/"; fi
  local status=0
  "$fuzz_bin/${name}_fuzzer" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
    -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$artifacts/${name}-" "$work/$name/corpus" \
    >"$work/$name/fuzz.log" 2>&1 || status=$?
  # libFuzzer's progress lines stay in the log; a problem prints its end.
  if [[ $status -ne 0 ]] || grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:" "$work/$name/fuzz.log"; then
    tail -n 60 "$work/$name/fuzz.log" >&2
    echo "run-fuzz: the $name fuzzer found a problem (exit $status); inputs in $artifacts" >&2
    failed=1
  else
    echo "run-fuzz: $name: no crash in ${seconds}s, $(grep -oE '^Done [0-9]+ runs' "$work/$name/fuzz.log" | cut -d' ' -f2) runs ($(ls "$work/$name/corpus" | wc -l) inputs in the corpus)"
  fi
}

# run_large_inputs: hostile files of 1-64 MiB, three at a time, each run
# once through the reader fuzzer, until $seconds have passed. Under the
# sanitizers a 64 MiB file takes about a minute on a busy machine; the
# timeout is a hang guard (quadratic resynchronisation took hours).
run_large_inputs() {
  local dir="$work/large" seed=1 status=0
  local deadline=$((SECONDS + seconds))
  mkdir -p "$dir"
  while [[ $SECONDS -lt $deadline ]]; do
    rm -f "$dir"/*
    mapfile -t inputs < <("$fuzz_bin/reader_large_inputs" "$dir" "$seed" 3)
    "$fuzz_bin/reader_fuzzer" -rss_limit_mb=2048 -timeout=300 \
      -artifact_prefix="$artifacts/reader-large-" "${inputs[@]}" \
      >"$work/large.log" 2>&1 || status=$?
    # The harness's own complaints start its lines with `reader_fuzzer: `;
    # libFuzzer's "<path>/reader_fuzzer: Running N inputs" is not one.
    if [[ $status -ne 0 ]] || grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:|^reader_fuzzer: " "$work/large.log"; then
      tail -30 "$work/large.log" >&2
      cp "${inputs[@]}" "$artifacts/" 2>/dev/null || true
      echo "run-fuzz: the reader failed on a large input (exit $status); inputs in $artifacts" >&2
      failed=1
      return
    fi
    seed=$((seed + 1))
  done
  echo "run-fuzz: reader: $((3 * (seed - 1))) large inputs (1-64 MiB) read in ${seconds}s"
}

for name in "${names[@]}"; do
  run_fuzzer "$name"
  if [[ $name == reader ]]; then run_large_inputs; fi
done
exit $failed
