#!/usr/bin/env bash
# The decode family on the GPU machine (issue 21): after `scripts/gpu-run.sh profile` built
# build-gpu, its GPU tests, the planner's choice on the decode and odd suites against cuBLASLt
# (BF16 and block-scaled FP8), and a sweep of forced decode configurations (no baseline) that
# the cost model is fitted to. Files in $OUT: decode-tests.log, decode-bf16.csv, decode-fp8.csv,
# odd-bf16.csv, sweep.csv, decode.log.
#   SWEEP=0 skips the sweep; SWEEP_CONFIGS="mma ...;mma ..." replaces its list.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
log="$OUT/decode.log"
CUDA_CACHE_DISABLE=1 timeout ${TEST_TIMEOUT:-240} build-gpu/tests/autogemm_tests \
  --gtest_filter="${GTEST_FILTER:-DecodeGpu.*:Fp8UnquantisedGpu.DecodeFamily:Fp8UnquantisedGpu.SingleRow:DecodeFamily.*}" \
  > "$OUT/decode-tests.log" 2>&1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure" "$OUT/decode-tests.log" | head -30
for run in "decode bf16" "decode fp8" "odd bf16"; do
  set -- $run
  echo "== bench $1 $2" >> "$log"
  timeout ${BENCH_TIMEOUT:-200} $bin bench --suite bench/suites/gemm-$1.csv --dtype $2 \
    --csv "$OUT/$1-$2.csv" >> "$log" 2>&1
  grep -iE "geomean|rows" "$log" | tail -2
done
[[ "${SWEEP:-1}" == 0 ]] && exit 0
default_configs=""
for bm in 8 16 32; do
  for bn in 16 32 64; do
    for bk in 128 256; do
      [[ $bm != 8 && $bk == 256 ]] && continue   # the register rule: 16 and 32 rows fit 128
      for sk in 1 2 4; do default_configs+="mma ${bm}x${bn}x${bk}$([[ $sk != 1 ]] && echo " sk$sk");"; done
    done
  done
done
IFS=';' read -ra configs <<< "${SWEEP_CONFIGS:-$default_configs}"
rm -f "$OUT/sweep.csv"
for c in "${configs[@]}"; do
  [[ -z "$c" ]] && continue
  timeout 120 $bin bench --suite bench/suites/gemm-decode.csv --config "$c" --no-baseline \
    --warmup 3 --iters 10 --csv /tmp/sweep-one.csv >> "$log" 2>&1 || echo "sweep $c failed" >> "$log"
  if [[ -f "$OUT/sweep.csv" ]]; then tail -n +2 /tmp/sweep-one.csv >> "$OUT/sweep.csv"
  else cp /tmp/sweep-one.csv "$OUT/sweep.csv"; fi
done
wc -l "$OUT/sweep.csv"
