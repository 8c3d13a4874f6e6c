#!/usr/bin/env bash
# Builds the fuzzers (the trace reader's, the XSpace importer's, the Chrome
# trace JSON importer's) and their seeds in BUILD_DIR (configured with clang
# and -DPODSCOPE_BUILD_FUZZ=ON), then fuzzes each for SECONDS on a copy of
# its seed corpus (plus tests/fuzz/regressions/NAME/, inputs that once
# found a problem). Exits non-zero when the fuzzer finds a crash, leak,
# timeout or sanitizer report; the input that caused it is kept in
# BUILD_DIR/fuzz-artifacts/.
#
#   tests/fuzz/run-fuzz.sh build-fuzz 60
set -euo pipefail

if [[ $# -ne 2 ]]; then
  echo "usage: $0 BUILD_DIR SECONDS" >&2
  exit 2
fi
build_dir=$(cd "$1" && pwd)
seconds=$2

cmake --build "$build_dir" --target reader_fuzzer reader_fuzz_seeds \
  xspace_fuzzer xspace_fuzz_seeds chrome_json_fuzzer chrome_json_fuzz_seeds

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
  "$fuzz_bin/${name}_fuzz_seeds" "$seeds"
  cp "$seeds"/* "$work/$name/corpus/"
  # Inputs that once found a problem stay in every run's corpus.
  local regressions
  regressions="$(dirname "$0")/regressions/$name"
  if [[ -d "$regressions" ]]; then cp "$regressions"/* "$work/$name/corpus/"; fi
  local status=0
  "$fuzz_bin/${name}_fuzzer" \
    -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
    -timeout=25 -print_final_stats=1 \
    -artifact_prefix="$artifacts/${name}-" "$work/$name/corpus" 2>&1 |
    tee "$work/$name/fuzz.log" || status=$?
  if [[ $status -ne 0 ]] || grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:" "$work/$name/fuzz.log"; then
    echo "run-fuzz: the $name fuzzer found a problem (exit $status); inputs in $artifacts" >&2
    failed=1
  else
    echo "run-fuzz: $name: no crash in ${seconds}s ($(ls "$work/$name/corpus" | wc -l) inputs in the corpus)"
  fi
}

run_fuzzer reader
run_fuzzer xspace
run_fuzzer chrome_json
exit $failed
