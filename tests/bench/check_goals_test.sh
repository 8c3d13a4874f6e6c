#!/bin/sh
# bench/check-goals and `bench/run --check`, without running a benchmark:
# fake goals and headlines, and fake suites that print headlines (or fail).
# - figures that meet their goals pass (exit 0); one under a ">=" goal or
#   over a "<=" goal is marked MISSED, named in the summary, and fails;
# - a figure of a part that ran but printed nothing (a failed suite) fails
#   as missing; one of a part that did not run is not checked;
# - a headline with no line in the goals fails; a malformed goals line is
#   an error naming the file and line (exit 2);
# - bench/run --check runs the suites and fails, naming the figure, when
#   one of them fails or misses a goal;
# - bench/goals.txt parses and lists exactly the headlines the benchmark
#   sources register or print.
# usage: check_goals_test.sh SOURCE_DIR OUTDIR
set -eu
src=$1; out=$2
rm -rf "$out"; mkdir -p "$out"
check=$src/bench/check-goals
fail() { echo "FAIL: $*"; [ ! -f "$out/log" ] || cat "$out/log"; exit 1; }
# expect CODE PATTERN... -- runs the rest; its exit code must be CODE and
# its output must hold every PATTERN (grep -E, line by line).
expect() {
  code=$1; shift
  pats=""
  while [ "$1" != "--" ]; do pats="$pats
$1"; shift; done
  shift
  rc=0; "$@" > "$out/log" 2>&1 || rc=$?
  [ "$rc" -eq "$code" ] || fail "exit $rc, expected $code: $*"
  echo "$pats" | while IFS= read -r p; do
    [ -z "$p" ] || grep -qE -- "$p" "$out/log" || fail "no line matching '$p' from: $*"
  done
}

cat > "$out/goals.txt" <<'GOALS'
# a comment
fast.events_per_s   >= 80e6  fast    # at least
fast.bytes          <= 3     fast
fast.ref_ns         ref      fast
slow.step_ms        lower    slow_part
other.figure        <= 1     other   # not run below
GOALS
cat > "$out/good.txt" <<'H'
== some other line
fast.events_per_s 8.1e+07 events/s
fast.bytes 2.94 bytes/event
fast.ref_ns 17 ns
slow.step_ms 400 ms
H
expect 0 '^ok +fast.events_per_s +8.1e\+07 events/s +>= 8e\+07$' \
  '^ok +fast.bytes +2.94 bytes/event +<= 3$' 'slow.step_ms +400 ms +\(lower is better; no goal\)' \
  'every figure with a goal meets it \(2 of the 4' \
  -- "$check" "$out/goals.txt" "$out/good.txt" fast slow_part
grep -q 'other' "$out/log" && fail "a figure of a part that did not run was checked"
# Asked for every suite: the programs that did not run are named.
expect 0 'not built, so not checked: bench_other' \
  -- "$check" --all "$out/goals.txt" "$out/good.txt" fast slow_part

sed 's/^fast.events_per_s .*/fast.events_per_s 6.9e+07 events\/s/' "$out/good.txt" > "$out/slow.txt"
expect 1 '^MISSED +fast.events_per_s +6.9e\+07' '1 figure falls short' \
  'fast.events_per_s 6.9e\+07, goal >= 8e\+07' \
  -- "$check" "$out/goals.txt" "$out/slow.txt" fast slow_part
sed 's/^fast.bytes .*/fast.bytes 3.01 bytes\/event/' "$out/good.txt" > "$out/big.txt"
expect 1 '^MISSED +fast.bytes +3.01' 'fast.bytes 3.01, goal <= 3' \
  -- "$check" "$out/goals.txt" "$out/big.txt" fast
# Exactly at the goal meets it.
sed 's/^fast.bytes .*/fast.bytes 3 bytes\/event/' "$out/good.txt" > "$out/edge.txt"
expect 0 '^ok +fast.bytes +3 bytes' -- "$check" "$out/goals.txt" "$out/edge.txt" fast

grep -v '^slow.step_ms' "$out/good.txt" > "$out/nostep.txt"
expect 1 '^MISSING +slow.step_ms' 'slow.step_ms is missing \(bench_slow_part printed no value' \
  -- "$check" "$out/goals.txt" "$out/nostep.txt" fast slow_part
expect 0 'every figure with a goal meets it' -- "$check" "$out/goals.txt" "$out/nostep.txt" fast

{ cat "$out/good.txt"; echo "fast.new_figure 12 ms"; } > "$out/extra.txt"
expect 1 'fast.new_figure has no line in .*goals.txt' \
  -- "$check" "$out/goals.txt" "$out/extra.txt" fast slow_part

printf 'fast.bytes =< 3 fast\n' > "$out/bad1.txt"
expect 2 'bad1.txt:1: goal "=<" is not' -- "$check" "$out/bad1.txt" "$out/good.txt" fast
printf '# x\nfast.bytes <= three fast\n' > "$out/bad2.txt"
expect 2 'bad2.txt:2: expected FIGURE <= NUMBER PART' -- "$check" "$out/bad2.txt" "$out/good.txt" fast
printf 'fast.bytes <= 3 fast\nfast.bytes <= 4 fast\n' > "$out/bad3.txt"
expect 2 'bad3.txt:2: fast.bytes is listed twice' -- "$check" "$out/bad3.txt" "$out/good.txt" fast

# bench/run --check over fake suites: bench_fast prints its headlines,
# bench_slow_part fails (suite "slow" runs it).
mkdir -p "$out/build/bench"
cat > "$out/build/bench/bench_fast" <<'S'
#!/bin/sh
echo "benchmark output"
echo "fast.events_per_s ${FAST_RATE:-9e+07} events/s"
echo "fast.bytes 2.5 bytes/event"
echo "fast.ref_ns 17 ns"
S
printf '#!/bin/sh\necho "slow.step_ms 300 ms"\n' > "$out/build/bench/bench_slow"
printf '#!/bin/sh\necho "crashed" >&2\nexit 3\n' > "$out/build/bench/bench_slow_part"
chmod +x "$out/build/bench/"bench_*
printf 'fast.events_per_s >= 80e6 fast\nfast.bytes <= 3 fast\nfast.ref_ns ref fast\nslow.step_ms lower slow\nslow.other_ms lower slow_part\n' \
  > "$out/run-goals.txt"
run() { env BUILD_DIR="$out/build" BENCH_OUT="$out/results" BENCH_GOALS="$out/run-goals.txt" "$src/bench/run" "$@"; }
expect 0 '^ok +fast.events_per_s +9e\+07' 'every figure with a goal meets it' -- run --check fast
expect 1 '^MISSED +fast.events_per_s +7e\+07' 'fast.events_per_s 7e\+07, goal >= 8e\+07' \
  -- env FAST_RATE=7e+07 sh -c "BUILD_DIR='$out/build' BENCH_OUT='$out/results' BENCH_GOALS='$out/run-goals.txt' '$src/bench/run' --check fast"
expect 1 'suite slow_part failed' '^MISSING +slow.other_ms' 'slow.other_ms is missing' \
  -- run --check slow
# Every suite (fast and slow, whose slow_part fails).
expect 1 '^ok +fast.bytes' '^MISSING +slow.other_ms' -- run --check
# Without --check a missed goal does not change the exit code.
expect 0 'fast.events_per_s 7e\+07' \
  -- env FAST_RATE=7e+07 sh -c "BUILD_DIR='$out/build' BENCH_OUT='$out/results' '$src/bench/run' fast"

# The real goals: they parse, and list exactly what the benchmarks print.
files=$(cd "$src" && { ls bench/*.cc; find tests -name '*bench*.cc'; } | sort -u)
(cd "$src" && grep -ohE '"[a-z0-9_]+\.[a-z0-9_.]+(", "| %)' $files) |
  sed 's/^"//; s/", "$//; s/ %$//' | sort -u > "$out/printed.txt"
[ "$(wc -l < "$out/printed.txt")" -gt 40 ] || fail "found only $(wc -l < "$out/printed.txt") headlines in the sources"
sed 's/#.*//' "$src/bench/goals.txt" | awk 'NF { print $1 }' | sort > "$out/listed.txt"
sort -u "$out/listed.txt" | cmp -s - "$out/listed.txt" || fail "bench/goals.txt lists a figure twice"
comm -23 "$out/printed.txt" "$out/listed.txt" > "$out/unlisted.txt"
[ ! -s "$out/unlisted.txt" ] || { echo "headlines without a goal line in bench/goals.txt:"; cat "$out/unlisted.txt"; exit 1; }
comm -13 "$out/printed.txt" "$out/listed.txt" > "$out/stale.txt"
[ ! -s "$out/stale.txt" ] || { echo "bench/goals.txt lists figures no benchmark prints:"; cat "$out/stale.txt"; exit 1; }
awk '{ print $1, 1, "x" }' "$out/printed.txt" > "$out/all.txt"
parts=$(sed 's/#.*//' "$src/bench/goals.txt" | awk 'NF { print $NF }' | sort -u)
# shellcheck disable=SC2086
"$check" "$src/bench/goals.txt" "$out/all.txt" $parts > "$out/log" 2>&1 || [ $? -eq 1 ] ||
  fail "bench/goals.txt does not parse"
grep -q 'has no line\|is missing' "$out/log" && fail "bench/goals.txt and the sources disagree"
echo "ok"
