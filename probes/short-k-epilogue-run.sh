#!/usr/bin/env bash
# One device call for the short-K epilogue questions (about 4-5 minutes on a cold H200):
#  1. build-gpu (scripts/gpu-run.sh profile);
#  2. tile traces of probes/short-k-tile-trace-bf16.txt plain, with a bf16 bias and with a bias
#     and gelu_tanh (scripts/gpu-tile-trace.sh)          -> trace-{plain,bias,gelu}/tile-trace-summary.txt
#  3. the forced gelu_tanh tiles of probes/gelu-short-k-configs-bf16.txt (scripts/gpu-configs.sh)
#                                                          -> gelu-configs.txt
# Everything lands in one tarball, $OUT/short-k-epilogue.tgz.
#   bash probes/short-k-epilogue-run.sh      (device call; carry .gpu-deps)
set -uo pipefail
cd "$(dirname "$0")/.."
final_out=${OUT:-/tmp/autogemm-out}
work=$(mktemp -d)
export OUT=$work
bash scripts/gpu-run.sh profile > "$work/profile.txt" 2>&1 || { tail -30 "$work/build.log"; exit 1; }
for variant in plain bias gelu; do
  case $variant in
    plain) extra="" ;;
    bias) extra="--bias bf16" ;;
    gelu) extra="--bias bf16 --activation gelu_tanh" ;;
  esac
  mkdir -p "$work/trace-$variant"
  OUT="$work/trace-$variant" BENCH_EXTRA="$extra" \
    bash scripts/gpu-tile-trace.sh probes/short-k-tile-trace-bf16.txt > "$work/trace-$variant.log" 2>&1
  echo "== $variant"; tail -25 "$work/trace-$variant/tile-trace-summary.txt" 2>/dev/null
done
BENCH_EXTRA="--bias bf16 --activation gelu_tanh" \
  bash scripts/gpu-configs.sh probes/gelu-short-k-configs-bf16.txt | tee "$work/gelu-configs.txt"
mkdir -p "$final_out"
tar czf "$final_out/short-k-epilogue.tgz" -C "$work" .
