#!/bin/sh
# examples/train_mnist --spmd (the seed's SPMD MNIST example) as real jobs
# on synthetic data, a few steps (small batch):
# - 2 processes x 2 devices under `podscope launch`: both ranks end with the
#   same parameters, and every step's loss matches the data-parallel run of
#   the same job on the same global batches within 2e-3 (absolute; losses
#   are ~2.3 and only float summation order differs);
# - the trace of each rank shows its devices' shard work (spmd_shard with
#   device and shard_shape) and the inserted collectives with the sharding
#   change that caused each and their bytes; `podscope summary` lists them;
# - 3 hosts (network namespaces on a bridge, one process with 2 devices
#   each): the job trains and matches the single-process run on 6 devices.
#   Where tests/common/netns_check.sh finds that namespaces cannot be made,
#   this part says why and exits 77 (ctest's SKIP_RETURN_CODE), or fails
#   with PODSCOPE_REQUIRE_NETNS=1.
# usage: train_spmd_test.sh TRAIN_MNIST PODSCOPE OUTDIR [local|hosts3]
#   (both parts when none is named)
set -eu
train=$1; podscope=$2; out=$3; part=${4:-all}
rm -rf "$out"; mkdir -p "$out"
args="--fake_data --steps 3 --log_every 1 --batch_size 16 --test_batches 0 --profiler_port -1"
loss() {  # log, rank, step
  awk -v r="[rank $2]" -v s=$3 'index($0, r) == 1 && $3 == "step" && $4 == s { print $6 }' "$1"
}

run_launch() {  # name, extra flags
  name=$1; shift
  env CPU_NUM_DEVICES=2 PODSCOPE_SESSION=$name "$podscope" launch \
    --nproc_per_node 2 "$train" $args --logdir "$out/$name" "$@" \
    > "$out/$name.log" 2>&1 || { echo "$name failed:"; cat "$out/$name.log"; exit 1; }
}

if [ "$part" != hosts3 ]; then
run_launch spmd --spmd
# --batch_size is the global batch with --spmd, each process's without:
# 2 processes x 8 step on the same 16 images.
run_launch dp --batch_size 8
grep -q '\[rank 1\] devices: 4 in the job (2 here); batch 16, 3 steps, spmd' "$out/spmd.log" || {
  echo "the SPMD job did not span 4 devices:"; cat "$out/spmd.log"; exit 1; }
h0=$(grep '^\[rank 0\] params ' "$out/spmd.log" | cut -d' ' -f4)
h1=$(grep '^\[rank 1\] params ' "$out/spmd.log" | cut -d' ' -f4)
[ -n "$h0" ] && [ "$h0" = "$h1" ] || { echo "ranks differ: '$h0' vs '$h1'"; exit 1; }
for step in 0 1 2; do
  a=$(loss "$out/spmd.log" 0 $step); b=$(loss "$out/dp.log" 0 $step)
  [ -n "$a" ] && [ -n "$b" ] || { echo "no loss for step $step"; cat "$out/spmd.log" "$out/dp.log"; exit 1; }
  awk -v a="$a" -v b="$b" -v s=$step 'BEGIN { d = a - b; if (d < 0) d = -d;
    if (d > 2e-3) { printf "step %d: loss %s (spmd) vs %s (data parallel)\n", s, a, b; exit 1 } }'
done

n=0
for trace in "$out"/spmd/spmd/*.podtrace; do
  "$podscope" export --format chrome -o "$out/trace$n.json" "$trace"
  grep -o '"name":"spmd_shard"[^}]*' "$out/trace$n.json" > "$out/shards$n.txt" || true
  grep -q '"shard_shape":"[a-z0-9_]* [fi]32\[' "$out/shards$n.txt" || { echo "no shard shapes in $trace"; exit 1; }
  grep -o '"name":"spmd_collective"[^}]*' "$out/trace$n.json" > "$out/colls$n.txt" || true
  grep -q "\"reason\":\"fc2.weight: ('dim1', 'data') -> " "$out/colls$n.txt" || {
    echo "no fc2.weight collective in $trace"; head -5 "$out/colls$n.txt"; exit 1; }
  grep -q '"bytes":[1-9]' "$out/colls$n.txt" || { echo "no collective bytes in $trace"; exit 1; }
  "$podscope" summary "$trace" > "$out/summary$n.txt"
  grep -q 'SPMD collectives' "$out/summary$n.txt" || { echo "summary lists no SPMD collectives"; cat "$out/summary$n.txt"; exit 1; }
  n=$((n + 1))
done
[ $n -eq 2 ] || { echo "expected 2 traces, found $n"; exit 1; }
# Rank 0 drives global devices 0 and 1, rank 1 devices 2 and 3.
cat "$out"/shards*.txt | grep -o '"device":[0-9]*' | sort -u | tr '\n' ' ' > "$out/devices.txt"
grep -q '"device":0 "device":1 "device":2 "device":3' "$out/devices.txt" || {
  echo "shard work not on all 4 devices: $(cat "$out/devices.txt")"; exit 1; }

fi
[ "$part" != local ] || { echo "ok"; exit 0; }

# ---- three hosts in network namespaces.
. "$(dirname "$0")/../../common/netns_hosts.sh"
netns_hosts_require
trap netns_hosts_remove EXIT
netns_hosts_make 3 sp 200
rdzv=$(netns_host_ip 0):$(( 20000 + $$ % 10000 ))
pids=""
for i in 0 1 2; do
  ip netns exec "$(netns_host_ns $i)" env CPU_NUM_DEVICES=2 PODSCOPE_SESSION=hosts3 \
    PODSCOPE_JOB_TOKEN=spmd-test-token GLOO_SOCKET_IFNAME="$(netns_host_if $i)" \
    "$podscope" launch --insecure --nnodes 3 --node_rank $i --nproc_per_node 1 \
    --rdzv_endpoint $rdzv "$train" --spmd --fake_data --steps 2 --log_every 1 \
    --batch_size 12 --test_batches 0 --profiler_port -1 --logdir "$out/hosts3" \
    > "$out/host$i.log" 2>&1 &
  pids="$pids $!"
done
rc=0
for p in $pids; do wait $p || rc=1; done
[ $rc -eq 0 ] || { echo "a host failed:"; cat "$out"/host*.log; exit 1; }
env CPU_NUM_DEVICES=6 "$train" --spmd --fake_data --steps 2 --log_every 1 --batch_size 12 \
  --test_batches 0 --profiler_port -1 --logdir "$out/single6" > "$out/single6.log" 2>&1 || {
  echo "the 6-device run failed:"; cat "$out/single6.log"; exit 1; }
for step in 0 1; do
  a=$(loss "$out/host2.log" 2 $step)
  b=$(awk -v s=$step '$1 == "step" && $2 == s { print $4 }' "$out/single6.log")
  [ -n "$a" ] && [ -n "$b" ] || { echo "no loss for step $step on 3 hosts"; cat "$out/host2.log"; exit 1; }
  awk -v a="$a" -v b="$b" -v s=$step 'BEGIN { d = a - b; if (d < 0) d = -d;
    if (d > 2e-3) { printf "step %d: loss %s (3 hosts) vs %s (1 process)\n", s, a, b; exit 1 } }'
done
[ "$(ls "$out"/hosts3/hosts3/*.podtrace | wc -l)" -eq 3 ] || { echo "expected 3 host traces"; exit 1; }
echo "ok"
