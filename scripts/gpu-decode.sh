#!/usr/bin/env bash
# The decode family on the GPU machine (issue 21): after `scripts/gpu-run.sh profile` built
# build-gpu, its GPU tests, the planner's choice on the decode and odd suites against cuBLASLt
# (BF16 and block-scaled FP8), and a sweep of forced decode configurations (no baseline) that
# the cost model is fitted to. Files in $OUT: decode-tests.log, decode-bf16.csv, decode-fp8.csv,
# odd-bf16.csv, sweep.csv, decode.log.
#   SWEEP=0 skips the sweep; SWEEP_CONFIGS="mma ...;mma ..." replaces its list;
#   SWEEP_PATHS="registers rings" (the default) picks the load paths it lists.
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
# The register rule (at most 16 vectors a step) leaves, for BF16, 64 or 128 elements at 8 and
# 16 rows of A and 64 at 32; for block-scaled FP8, 128 or 256 at 8 and 16 rows, 128 at 32.
# Warp rings: 8 and 16 rows of A (the family's M), steps of 128, 256 and 512 bytes a row, the
# stage counts the planner lists (3, 4, 6), no split (their in-flight bytes need none on these
# rows; the planner's splits are tried by `ITERS=20 scripts/gpu-configs.sh` on its top picks).
configs_for() {
  local list="" bm bn bk sk steps bytes stages
  [[ " ${SWEEP_PATHS:-registers rings} " == *" rings "* ]] &&
    for bm in 8 16; do
      for bn in 16 32 64; do
        for bytes in 128 256 512; do
          if [[ $1 == fp8 ]]; then bk=$bytes; else bk=$(( bytes / 2 )); fi
          [[ $1 == fp8 && $bk -lt 128 ]] && continue
          for stages in 3 4 6; do list+="mma ${bm}x${bn}x${bk} s$stages;"; done
        done
      done
    done
  [[ " ${SWEEP_PATHS:-registers rings} " == *" registers "* ]] || { echo "$list"; return; }
  for bm in 8 16 32; do
    if [[ $1 == bf16 ]]; then case $bm in 8) steps="64 128";; 16) steps="64 128";; 32) steps=64;; esac
    else case $bm in 32) steps=128;; *) steps="128 256";; esac; fi
    for bn in 16 32 64; do
      [[ $1 == fp8 && $bn == 32 ]] && continue
      for bk in $steps; do
        for sk in 1 2 4; do
          [[ $1 == fp8 && $sk == 2 ]] && continue
          list+="mma ${bm}x${bn}x${bk}$([[ $sk != 1 ]] && echo " sk$sk");"
        done
      done
    done
  done
  echo "$list"
}
rm -f "$OUT/sweep.csv"
for dtype in ${SWEEP_DTYPES:-bf16 fp8}; do
  IFS=';' read -ra configs <<< "${SWEEP_CONFIGS:-$(configs_for $dtype)}"
  for c in "${configs[@]}"; do
    [[ -z "$c" ]] && continue
    timeout 120 $bin bench --suite bench/suites/gemm-decode.csv --dtype $dtype --config "$c" \
      --no-baseline --warmup 3 --iters 10 --csv /tmp/sweep-one.csv >> "$log" 2>&1 ||
      echo "sweep $dtype $c failed" >> "$log"
    if [[ -f "$OUT/sweep.csv" ]]; then tail -n +2 /tmp/sweep-one.csv >> "$OUT/sweep.csv"
    else cp /tmp/sweep-one.csv "$OUT/sweep.csv"; fi
  done
done
wc -l "$OUT/sweep.csv"
