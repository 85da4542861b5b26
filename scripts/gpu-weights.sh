#!/usr/bin/env bash
# Weight-only GEMMs on the GPU machine (issue 51): after `scripts/gpu-run.sh profile` built
# build-gpu, their GPU tests (one GEMM and grouped), then each format on the decode suite
# (against our BF16 GEMM, cuBLASLt and a read of the packed bytes) and on the MoE decode suite
# (bench --grouped --weights: against our BF16 grouped GEMM), and forced configurations of
# CONFIGS on ROWS (int4-g128). Files in $OUT: weights-tests.log, decode-FORMAT.csv,
# moe-FORMAT.csv, configs.txt, weights.log.
#   FORMATS="int4-g128 int4-g128-zp mxfp4 int8" (default: int4-g128 mxfp4 int8)
#   CONFIGS="mma 8x16x128;mma 8x64x128 sk4" ROWS="1 14336 4096;1 4096 14336" (no CONFIGS: none)
#   TESTS=0 skips the tests; SUITES=0 the suites
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
log="$OUT/weights.log"
if [[ "${TESTS:-1}" != 0 ]]; then
  # CUDA_CACHE_DISABLE as scripts/gpu-check.sh: a kernel NVRTC finds in the machine's compute
  # cache comes without ptxas's report, which the spill checks read.
  CUDA_CACHE_DISABLE=1 timeout ${TEST_TIMEOUT:-300} build-gpu/tests/autogemm_tests \
    --gtest_filter="${GTEST_FILTER:-WeightOnly*:GroupedWeightOnly*:Weights*}" \
    > "$OUT/weights-tests.log" 2>&1
  grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure" "$OUT/weights-tests.log" | head -30
fi
if [[ "${SUITES:-1}" != 0 ]]; then
  for format in ${FORMATS:-int4-g128 mxfp4 int8}; do
    echo "== bench --weights $format (decode suite)" >> "$log"
    timeout ${BENCH_TIMEOUT:-300} $bin bench --weights "$format" --suite bench/suites/gemm-decode.csv \
      --csv "$OUT/decode-$format.csv" >> "$log" 2>&1
    echo "== bench --grouped --weights $format (MoE decode suite)" >> "$log"
    timeout ${BENCH_TIMEOUT:-300} $bin bench --grouped bench/suites/grouped-moe-decode.csv \
      --weights "$format" --csv "$OUT/moe-$format.csv" >> "$log" 2>&1
  done
  grep -E "^== |geomean|share of a bare read|FAILED" "$log"
fi
[[ -z "${CONFIGS:-}" ]] && exit 0
IFS=';' read -ra configs <<< "$CONFIGS"
IFS=';' read -ra rows <<< "${ROWS:-1 14336 4096;1 4096 14336;8 14336 4096}"
for row in "${rows[@]}"; do
  read -r m n k <<< "$row"
  for config in "" "${configs[@]}"; do
    printf '%s x %s x %s  %-28s ' "$m" "$n" "$k" "${config:-(planner)}" >> "$OUT/configs.txt"
    $bin bench --weights int4-g128 --m "$m" --n "$n" --k "$k" ${config:+--config "$config"} \
      --iters "${ITERS:-20}" 2>&1 | grep -E "^ +[0-9]+ |error" | awk '{print $(NF-7), $(NF-1), $NF}' \
      >> "$OUT/configs.txt"
  done
done
cat "$OUT/configs.txt"
