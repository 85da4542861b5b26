#!/usr/bin/env bash
# Nsight Compute sections for one FP8 prefill kernel (notes.md section 9: which port limits
# 128x128 pb2). Run after scripts/gpu-run.sh built build-gpu; writes $OUT/ncu-fp8.txt.
set -u
cd "$(dirname "$0")/.."
if [[ -d .gpu-deps ]]; then eval "$(bash .gpu-deps/gpu-deps unpack)"; fi
export AUTOGEMM_CACHE_DIR="${AUTOGEMM_CACHE_DIR:-/tmp/autogemm-cache}"
b=build-gpu/src/cli/autogemm
cfg="${CONFIG:-128x128x128 s6 c2 ws p g8 cl2x1/b tma/tma pb2}"
$b bench --dtype fp8 --m 4096 --n 4096 --k 7168 --config "$cfg" --iters 3 --warmup 1 > /dev/null 2>&1
timeout 300 ncu --clock-control none --kernel-name regex:gemm_kernel --launch-skip 2 --launch-count 1 \
  --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
  --section WarpStateStats \
  $b bench --dtype fp8 --m 4096 --n 4096 --k 7168 --config "$cfg" --iters 2 --warmup 1 --no-baseline \
  > "$OUT/ncu-fp8.txt" 2>&1
grep -vE "^==PROF==|^\s*$" "$OUT/ncu-fp8.txt" | tail -90
