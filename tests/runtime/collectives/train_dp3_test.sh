#!/bin/sh
# examples/train_mnist as a job of three processes under `podscope launch`,
# a number of ranks that divides neither the default batch nor a process's
# batch over two devices. Checked as a user would:
# - with the defaults (--batch_size 256 per process), every rank trains;
# - 3 ranks x --batch_size 8 trains on the same 24 images per step as one
#   process with --batch_size 24: every step's loss matches within 1e-3
#   (absolute; losses are ~2.3 and only float summation order differs) and
#   the three ranks end with the same parameters;
# - with CPU_NUM_DEVICES=2, 3 ranks x --batch_size 5 split each process's
#   batch into slices of 3 and 2 images: the loss still matches one process
#   with --batch_size 15 (a mean over the slices' means, or gradients not
#   weighted by each slice's images, would not), and the test accuracy
#   counts every image;
# - --spmd over the 3 ranks' devices (a mesh of 3, the global batch of 16
#   tiled 6, 6, 4) trains like one process on the same 16 images.
# usage: train_dp3_test.sh TRAIN_MNIST PODSCOPE OUTDIR
set -eu
train=$1; podscope=$2; out=$3
rm -rf "$out"; mkdir -p "$out"
quiet="--test_batches 0 --profiler_port -1"

# The loss of every step in a log (launch prefixes "[rank N] ").
losses() {
  awk '{ if ($1 == "[rank") { $1 = ""; $2 = "" } $0 = $0; }
       $1 == "step" && $3 == "loss" { print $2, $4 }' "$1"
}
# Fails unless every step of $1 (rank 0 of a job) has the loss of $2.
same_losses() {
  losses "$1" > "$out/a.txt"; losses "$2" > "$out/b.txt"
  [ -s "$out/a.txt" ] || { echo "no losses in $1:"; cat "$1"; exit 1; }
  join "$out/a.txt" "$out/b.txt" > "$out/ab.txt"
  [ "$(wc -l < "$out/ab.txt")" -eq "$(wc -l < "$out/a.txt")" ] &&
    [ "$(wc -l < "$out/ab.txt")" -eq "$(wc -l < "$out/b.txt")" ] || {
    echo "the runs logged different steps:"; cat "$out/a.txt" "$out/b.txt"; exit 1; }
  awk -v what="$3" '{ d = $2 - $3; if (d < 0) d = -d;
    if (d > 1e-3) { printf "%s: step %d loss %s (3 ranks) vs %s (1 process)\n",
                    what, $1, $2, $3; bad = 1 } } END { exit bad }' "$out/ab.txt"
}
one_params() {
  n=$(grep -o 'params [0-9a-f]*' "$1" | sort -u | wc -l)
  ranks=$(grep -c 'params [0-9a-f]*' "$1")
  [ "$n" -eq 1 ] && [ "$ranks" -eq 3 ] || {
    echo "the 3 ranks do not end with one set of parameters:"; cat "$1"; exit 1; }
}

"$podscope" launch --nproc_per_node 3 "$train" --fake_data --steps 1 $quiet \
  --logdir "$out/defaults" > "$out/defaults.log" 2>&1 || {
  echo "3 ranks with the default batch failed:"; cat "$out/defaults.log"; exit 1; }
grep -q '^\[rank 2\] devices: CPU:2; batch 256 per process (256 per device), 768 over 3 processes' \
  "$out/defaults.log" || {
  echo "rank 2 does not say its batch:"; cat "$out/defaults.log"; exit 1; }
one_params "$out/defaults.log"

args="--fake_data --steps 3 --log_every 1 $quiet"
"$podscope" launch --nproc_per_node 3 "$train" $args --batch_size 8 \
  --logdir "$out/job" > "$out/job.log" 2>&1 || {
  echo "3 ranks x 8 failed:"; cat "$out/job.log"; exit 1; }
"$train" $args --batch_size 24 --logdir "$out/single" > "$out/single.log" 2>&1 || {
  echo "one process x 24 failed:"; cat "$out/single.log"; exit 1; }
grep '^\[rank 0\]' "$out/job.log" > "$out/job0.log"
same_losses "$out/job0.log" "$out/single.log" "3 ranks x 8"
one_params "$out/job.log"

args="--fake_data --steps 3 --log_every 1 --test_batches 1 --profiler_port -1"
CPU_NUM_DEVICES=2 "$podscope" launch --nproc_per_node 3 "$train" $args \
  --batch_size 5 --logdir "$out/job2" > "$out/job2.log" 2>&1 || {
  echo "3 ranks x 2 devices x 5 failed:"; cat "$out/job2.log"; exit 1; }
"$train" $args --batch_size 15 --logdir "$out/single2" > "$out/single2.log" 2>&1 || {
  echo "one process x 15 failed:"; cat "$out/single2.log"; exit 1; }
grep -q '^\[rank 1\] devices: CPU:2, CPU:3; batch 5 per process (3, 2 per device), 15 over 3 processes' \
  "$out/job2.log" || { echo "rank 1 does not say its slices:"; cat "$out/job2.log"; exit 1; }
grep '^\[rank 0\]' "$out/job2.log" > "$out/job2_0.log"
same_losses "$out/job2_0.log" "$out/single2.log" "3 ranks x 2 devices x 5"
one_params "$out/job2.log"
grep -q '^\[rank 0\] test accuracy: [0-9.]*% ([0-9]*/5)$' "$out/job2.log" || {
  echo "rank 0's accuracy is not over its 5 test images:"; cat "$out/job2.log"; exit 1; }
args="--fake_data --steps 3 --log_every 1 $quiet --batch_size 16"
"$podscope" launch --nproc_per_node 3 "$train" $args --spmd --logdir "$out/spmd" \
  > "$out/spmd.log" 2>&1 || { echo "--spmd over 3 ranks failed:"; cat "$out/spmd.log"; exit 1; }
"$train" $args --logdir "$out/single3" > "$out/single3.log" 2>&1 || {
  echo "one process x 16 failed:"; cat "$out/single3.log"; exit 1; }
grep '^\[rank 0\]' "$out/spmd.log" > "$out/spmd0.log"
same_losses "$out/spmd0.log" "$out/single3.log" "--spmd over 3 ranks"
echo "ok: 3 ranks train with the default batch, and match one process on the same images"
