#!/usr/bin/env bash
# Builds the reader fuzzer and its seeds in BUILD_DIR (configured with clang
# and -DPODSCOPE_BUILD_FUZZ=ON), then fuzzes for SECONDS on a copy of the
# seed corpus; then the Chrome trace JSON importer's fuzzer, for SECONDS
# more, on tests/fuzz/chrome_json_seeds. Exits non-zero when a fuzzer finds
# a crash, leak, timeout or sanitizer report; the input that caused it is kept in
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
  chrome_json_fuzzer
src_dir=$(cd "$(dirname "$0")" && pwd)

fuzz_bin="$build_dir/tests/fuzz"
seeds="$build_dir/fuzz-seeds"
artifacts="$build_dir/fuzz-artifacts"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$artifacts" "$work/corpus" "$work/json-corpus"

"$fuzz_bin/reader_fuzz_seeds" "$seeds"
cp "$seeds"/* "$work/corpus/"

status=0
"$fuzz_bin/reader_fuzzer" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
  -timeout=25 -print_final_stats=1 \
  -artifact_prefix="$artifacts/" "$work/corpus" 2>&1 |
  tee "$work/fuzz.log" || status=$?

cp "$src_dir"/chrome_json_seeds/* "$work/json-corpus/"
"$fuzz_bin/chrome_json_fuzzer" \
  -max_total_time="$seconds" -rss_limit_mb=2048 -max_len=65536 \
  -timeout=25 -print_final_stats=1 \
  -artifact_prefix="$artifacts/json-" "$work/json-corpus" 2>&1 |
  tee -a "$work/fuzz.log" || status=$?

if [[ $status -ne 0 ]] || grep -qE "ERROR: (libFuzzer|AddressSanitizer|UndefinedBehaviorSanitizer)|runtime error:" "$work/fuzz.log"; then
  echo "run-fuzz: the fuzzer found a problem (exit $status); inputs in $artifacts" >&2
  exit 1
fi
echo "run-fuzz: no crash in ${seconds}s per fuzzer ($(ls "$work/corpus" | wc -l) reader inputs, $(ls "$work/json-corpus" | wc -l) JSON inputs in the corpora)"
