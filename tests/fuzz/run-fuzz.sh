#!/usr/bin/env bash
# Builds the fuzzers (the trace reader's, the XSpace importer's, the Chrome
# trace JSON importer's) and their seeds in BUILD_DIR (configured with clang
# and -DPODSCOPE_BUILD_FUZZ=ON), then fuzzes each for SECONDS on a copy of
# its seed corpus (plus tests/fuzz/regressions/NAME/, inputs that once
# found a problem). Exits non-zero when the fuzzer finds a crash, leak,
# timeout or sanitizer report; the input that caused it is kept in
# BUILD_DIR/fuzz-artifacts/. NAME... (reader, xspace, chrome_json) picks
# fuzzers, all by default; JOBS sets the build's parallelism.
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
if [[ ${#names[@]} -eq 0 ]]; then names=(reader xspace chrome_json); fi
targets=()
for name in "${names[@]}"; do
  case "$name" in
    reader | xspace | chrome_json) targets+=("${name}_fuzzer" "${name}_fuzz_seeds") ;;
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

for name in "${names[@]}"; do run_fuzzer "$name"; done
exit $failed
