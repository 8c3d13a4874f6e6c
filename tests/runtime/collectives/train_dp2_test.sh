#!/bin/sh
# examples/train_mnist as a two-process data-parallel job on synthetic data
# (ranks started by hand with RANK / WORLD_SIZE / MASTER_ADDR / MASTER_PORT;
# the first job meets through Job::Init's coordinator, the second, with two
# devices per rank, through a FileStore),
# against one process stepping on the same images (--batch_size is per
# process: 2 ranks x 32 against 1 process x 64):
# - both ranks end with bitwise identical parameters (same "params" hash);
# - every step's loss (the mean over both ranks) matches the single-process
#   loss on the same global batch within 2e-3 (absolute; losses are ~2.3 and
#   only float summation order differs);
# - each rank's trace holds AllReduce slices with bytes, op, wait_ns and a
#   collective_id, and both ranks hold the same ids;
# - with CPU_NUM_DEVICES=2 (two devices per rank) the replicas stay
#   identical too.
# usage: train_dp2_test.sh TRAIN_MNIST PODSCOPE OUTDIR
set -eu
train=$1; podscope=$2; out=$3
rm -rf "$out"; mkdir -p "$out"
args="--fake_data --steps 3 --log_every 1 --batch_size 32 --test_batches 0 --profiler_port 0"
port=$(( 20000 + $$ % 20000 ))
common="MASTER_ADDR=127.0.0.1 MASTER_PORT=$port WORLD_SIZE=2 PODSCOPE_SESSION=dp2"
env $common RANK=0 LOCAL_RANK=0 "$train" $args --logdir "$out/job" \
  > "$out/rank0.log" 2>&1 &
p0=$!
env $common RANK=1 LOCAL_RANK=1 "$train" $args --logdir "$out/job" \
  > "$out/rank1.log" 2>&1 &
p1=$!
rc=0
wait $p0 || rc=1
wait $p1 || rc=1
if [ $rc -ne 0 ]; then
  echo "a rank failed:"; cat "$out/rank0.log" "$out/rank1.log"; exit 1
fi
env -u RANK -u WORLD_SIZE -u PODSCOPE_SESSION "$train" $args --batch_size 64 \
  --logdir "$out/single" > "$out/single.log" 2>&1 || {
  echo "the single-process run failed:"; cat "$out/single.log"; exit 1; }

h0=$(grep '^params ' "$out/rank0.log"); h1=$(grep '^params ' "$out/rank1.log")
[ -n "$h0" ] && [ "$h0" = "$h1" ] || {
  echo "replicas differ: rank 0 '$h0', rank 1 '$h1'"; exit 1; }

for step in 0 1 2; do
  a=$(awk -v s=$step '$1 == "step" && $2 == s { print $4 }' "$out/rank0.log")
  b=$(awk -v s=$step '$1 == "step" && $2 == s { print $4 }' "$out/single.log")
  [ -n "$a" ] && [ -n "$b" ] || { echo "no loss for step $step"; exit 1; }
  awk -v a="$a" -v b="$b" -v s=$step 'BEGIN { d = a - b; if (d < 0) d = -d;
    if (d > 2e-3) { printf "step %d: loss %s (2 ranks) vs %s (1 process)\n", s, a, b; exit 1 } }'
done

n=0
for trace in "$out"/job/dp2/*.podtrace; do
  "$podscope" export --format chrome -o "$out/trace$n.json" "$trace"
  grep -o '"name":"AllReduce"[^}]*' "$out/trace$n.json" > "$out/allreduce$n.txt" || true
  grep -q '"bytes":' "$out/allreduce$n.txt" || { echo "no AllReduce bytes in $trace"; exit 1; }
  # Gradients weighted by each replica's share of the images, then summed.
  grep -q '"op":"sum"' "$out/allreduce$n.txt" || { echo "no sum AllReduce in $trace"; exit 1; }
  grep -q '"wait_ns":' "$out/allreduce$n.txt" || { echo "no wait_ns in $trace"; exit 1; }
  grep -o '"collective_id":"[^"]*"' "$out/allreduce$n.txt" | sort > "$out/ids$n.txt"
  n=$((n + 1))
done
[ $n -eq 2 ] || { echo "expected 2 traces in $out/job/dp2, found $n"; exit 1; }
[ -s "$out/ids0.txt" ] || { echo "no collective ids"; exit 1; }
cmp -s "$out/ids0.txt" "$out/ids1.txt" || { echo "collective ids differ across ranks"; exit 1; }
# Two devices per rank: in-process reduction, then Gloo.
common2="MASTER_ADDR=127.0.0.1 MASTER_PORT=$((port + 1)) WORLD_SIZE=2 PODSCOPE_SESSION=dp2x2 CPU_NUM_DEVICES=2"
args2="--fake_data --steps 2 --log_every 1 --batch_size 32 --test_batches 0 --profiler_port -1"
env $common2 RANK=0 LOCAL_RANK=0 "$train" $args2 --logdir "$out/job2" \
  --store_dir "$out/store2" > "$out/rank0_2dev.log" 2>&1 &
p0=$!
env $common2 RANK=1 LOCAL_RANK=1 "$train" $args2 --logdir "$out/job2" \
  --store_dir "$out/store2" > "$out/rank1_2dev.log" 2>&1 &
p1=$!
wait $p0 || rc=1
wait $p1 || rc=1
if [ $rc -ne 0 ]; then
  echo "a two-device rank failed:"; cat "$out/rank0_2dev.log" "$out/rank1_2dev.log"; exit 1
fi
grep -q 'connected (store ' "$out/rank1_2dev.log" || {
  echo "the two-device job did not use its FileStore"; exit 1; }
grep -q 'devices: CPU:2, CPU:3; batch 32 per process (16 per device), 64 over 2 processes' "$out/rank1_2dev.log" || {
  echo "rank 1 did not use global devices 2 and 3:"; cat "$out/rank1_2dev.log"; exit 1; }
grep -q 'connected (job coordinator ' "$out/rank1.log" || {
  echo "the first job did not meet through Job::Init"; exit 1; }
g0=$(grep '^params ' "$out/rank0_2dev.log"); g1=$(grep '^params ' "$out/rank1_2dev.log")
[ -n "$g0" ] && [ "$g0" = "$g1" ] || {
  echo "two-device replicas differ: rank 0 '$g0', rank 1 '$g1'"; exit 1; }
echo "ok: $(wc -l < "$out/ids0.txt") all-reduces joined across 2 ranks; $h0; 2x2 devices $g0"
