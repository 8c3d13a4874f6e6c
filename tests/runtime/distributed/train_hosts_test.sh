#!/bin/sh
# examples/train_mnist as a data-parallel job on three hosts (network
# namespaces on a bridge, one `podscope launch` each, joined by
# --rdzv_endpoint), every host's clock skewed by seconds, each rank
# recording itself with StartTrace; while it trains, `podscope capture
# --job` records every rank by the coordinator's address from outside the
# hosts. Checked as a user would:
# - the capture names 3 of 3 ranks, the manifest lists each with its host;
# - the captured files hold the capture's window, not the ranks' traces
#   from their start;
# - `podscope analyze` joins the gradient all-reduces of the three ranks by
#   collective id, on both the capture and the ranks' own files;
# - the ranks' own files carry offsets to rank 0's clock that undo the
#   skews (`podscope summary --json`);
# - every file reads complete (`podscope check`).
# Skipped (exit 77) where network namespaces cannot be made, unless
# PODSCOPE_REQUIRE_NETNS=1 makes that a failure.
# usage: train_hosts_test.sh TRAIN_MNIST PODSCOPE OUTDIR
set -eu
train=$1; podscope=$2; out=$3
rm -rf "$out"; mkdir -p "$out"
. "$(dirname "$0")/../../common/netns_hosts.sh"
netns_hosts_require

pids=""
cleanup() {
  for p in $pids; do kill "$p" 2>/dev/null || true; done
  netns_hosts_remove
}
trap cleanup EXIT
netns_hosts_make 3 th 150

rdzv=$(netns_host_ip 0):$(( 20000 + $$ % 10000 ))
token=train-hosts-token
# The rendezvous and the job's coordinator (both on host 0) speak TLS with
# a certificate for host 0's address; every host and the capture trust it.
openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj /CN=podscope-job \
  -addext "subjectAltName=IP:$(netns_host_ip 0)" -keyout "$out/job-key.pem" \
  -out "$out/job-cert.pem" > "$out/openssl.log" 2>&1 || {
  echo "openssl could not make a certificate:"; cat "$out/openssl.log"; exit 1; }
export PODSCOPE_JOB_TLS_CERT="$out/job-cert.pem"
export PODSCOPE_JOB_TLS_KEY="$out/job-key.pem"
export PODSCOPE_JOB_TLS_CA="$out/job-cert.pem"
for i in 0 1 2; do
  # Host i's clock is i * 1.7 s ahead of host 0's and gains 30 ppm.
  ip netns exec "$(netns_host_ns $i)" env PODSCOPE_SESSION=self \
    PODSCOPE_JOB_TOKEN=$token GLOO_SOCKET_IFNAME="$(netns_host_if $i)" \
    PODSCOPE_TEST_CLOCK_OFFSET_NS=$(( i * 1700000000 )) \
    PODSCOPE_TEST_CLOCK_DRIFT_PPM=$(( i * 30 )) \
    "$podscope" launch --nnodes 3 --node_rank $i --nproc_per_node 1 \
    --rdzv_endpoint $rdzv "$train" --fake_data --steps 400 --log_every 1 \
    --batch_size 4 --test_batches 0 --profiler_port 0 --logdir "$out/own" \
    > "$out/host$i.log" 2>&1 &
  pids="$pids $!"
done

# Training runs once rank 0 has logged a few steps.
waited=0
until grep -q '^\[rank 0\] step  *3 ' "$out/host0.log" 2>/dev/null; do
  sleep 0.2; waited=$((waited + 1))
  if [ $waited -gt 900 ]; then
    echo "the job did not start training in 180 s:"; cat "$out"/host*.log; exit 1
  fi
done

PODSCOPE_JOB_TOKEN=$token "$podscope" capture --job $rdzv --logdir "$out/cap" \
  --duration_ms 1200 --session byjob > "$out/capture.log" 2>&1 || {
  echo "capture --job failed:"; cat "$out/capture.log"; cat "$out"/host*.log; exit 1; }
grep -q '3 of 3 workers answered' "$out/capture.log" || {
  echo "not every rank answered:"; cat "$out/capture.log"; exit 1; }
manifest="$out/cap/byjob/manifest.json"
grep -q "\"job\": \"$rdzv\"" "$manifest" || { echo "no job in the manifest:"; cat "$manifest"; exit 1; }
for i in 0 1 2; do
  grep -q "{\"rank\": $i, \"address\": \"$(netns_host_ip $i):" "$manifest" || {
    echo "rank $i is not listed with its host:"; cat "$manifest"; exit 1; }
done

rc=0
for p in $pids; do wait "$p" || rc=1; done
pids=""
[ $rc -eq 0 ] || { echo "a host failed:"; cat "$out"/host*.log; exit 1; }

"$podscope" check "$out"/cap/byjob/*.podtrace "$out"/own/self/*.podtrace > "$out/check.log" 2>&1 || {
  echo "a file does not read complete:"; cat "$out/check.log"; exit 1; }
[ "$(ls "$out"/cap/byjob/*.podtrace | wc -l)" -eq 3 ] || { echo "expected 3 captured files"; exit 1; }
[ "$(ls "$out"/own/self/*.podtrace | wc -l)" -eq 3 ] || { echo "expected 3 files of the ranks"; exit 1; }

# The capture holds its window: each captured file spans about the capture,
# far less than the rank's own trace of the whole run.
"$podscope" summary --json "$out/cap/byjob" > "$out/cap-summary.json"
"$podscope" summary --json "$out/own/self" > "$out/own-summary.json"
span_s() {  # summary json: the longest "duration_ns" of a process, in s
  grep -o '"duration_ns": [0-9]*' "$1" | awk '{ if ($2 > m) m = $2 } END { printf "%.2f", m / 1e9 }'
}
cap_span=$(span_s "$out/cap-summary.json"); own_span=$(span_s "$out/own-summary.json")
awk -v c="$cap_span" -v o="$own_span" 'BEGIN { if (c <= 0 || c > 4 || c >= o) {
  printf "captured files span %s s against the ranks own %s s\n", c, o; exit 1 } }'

# The ranks' own files line up on rank 0's clock: offsets undo the skews.
for i in 1 2; do
  grep -q "\"process_index\": $i" "$out/own-summary.json" || {
    echo "rank $i is missing from the summary"; cat "$out/own-summary.json"; exit 1; }
done
offsets=$(grep -o '"clock_offset_ns": -\?[0-9]*' "$out/own-summary.json" | awk '{ print $2 }' | sort -n | tr '\n' ' ')
echo "clock offsets of the ranks' own files: $offsets"
echo "$offsets" | awk '{ ok = 0; for (i = 1; i <= NF; ++i) {
    d3 = $i + 3400000000; d2 = $i + 1700000000; if (d3 < 0) d3 = -d3; if (d2 < 0) d2 = -d2;
    if (d3 < 5000000) ok += 1; if (d2 < 5000000) ok += 2 }
  if (ok != 3) { print "offsets do not undo the skews of 1.7 s and 3.4 s"; exit 1 } }'

for dir in cap/byjob own/self; do
  "$podscope" analyze --json "$out/$dir" > "$out/analyze-$(basename $dir).json" 2>&1 || {
    echo "analyze $dir failed"; cat "$out/analyze-$(basename $dir).json"; exit 1; }
  grep -q '"joined_by_id": [1-9]' "$out/analyze-$(basename $dir).json" || {
    echo "analyze $dir joined no collective by id across the ranks:"
    grep -A3 '"collectives"' "$out/analyze-$(basename $dir).json" | head -20; exit 1; }
done
echo "ok: 3 hosts trained, captured by job ($cap_span s of $own_span s), offsets $offsets"
