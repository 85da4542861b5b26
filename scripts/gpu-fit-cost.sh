#!/usr/bin/env bash
# Issue 49 part 2 on the GPU machine: the cost model's rates fitted to this GPU. Builds
# build-gpu as scripts/gpu-run.sh does, then
#  - `autogemm tune --sweep --sample SAMPLE` over FIT (default bench/suites/gemm-random.csv)
#    and HOLDOUT (default bench/suites/gemm-random-holdout.csv), per dtype (DTYPES, default
#    bf16)                                               -> sweep-fit-D.csv, sweep-holdout-D.csv
#  - `autogemm fit-cost` on the fit sweeps, reported on the held-out ones, written as the
#    device's calibration                         -> cost-calibration.json, fit-cost.txt
# Where fit-cost says it is worth keeping (better picks, not only smaller errors), copy it to
# data/cost-model/PRESET.json (fit-cost names the preset of this GPU's product; the library
# embeds the file for it), or point AUTOGEMM_COST_CALIBRATION at it. Every kernel is compiled first, in parallel processes.
# Timing (2 H200s, 2026-11-30, BF16, SAMPLE=8): a suite's sweep with every kernel compiled cold
# took 295 s, and 37 s again with its kernels cached (AUTOGEMM_CACHE_DIR), so on a cold machine
# one device call holds one sweep: raise SWEEP_TIMEOUT (default 250 s a sweep) and expect a
# second call for the held-out suite. A sweep its timeout stops keeps the rows it finished (the
# CSV is rewritten after each), and the fit takes those.
#   scripts/gpu-fit-cost.sh
#   SAMPLE=8 DTYPES="bf16 fp8" FIT=bench/suites/gemm-random.csv scripts/gpu-fit-cost.sh
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
scripts/gpu-run.sh profile || exit 1
fit_suite=${FIT:-bench/suites/gemm-random.csv}
holdout_suite=${HOLDOUT:-bench/suites/gemm-random-holdout.csv}
fits="" holdouts="" status=0
for dtype in ${DTYPES:-bf16}; do
  for part in fit holdout; do
    suite=$fit_suite
    [[ $part == holdout ]] && suite=$holdout_suite
    csv="$OUT/sweep-$part-$dtype.csv"
    timeout "${SWEEP_TIMEOUT:-250}" $bin tune --sweep --suite "$suite" --dtype "$dtype" \
      --sample "${SAMPLE:-8}" --sweep-csv "$csv" > "$OUT/sweep-$part-$dtype.txt" 2>&1 || status=1
    tail -3 "$OUT/sweep-$part-$dtype.txt"
    if [[ $part == fit ]]; then fits+="${fits:+,}$csv"; else holdouts+="${holdouts:+,}$csv"; fi
  done
done
$bin fit-cost --sweep "$fits" --holdout "$holdouts" --device 0 --out "$OUT/cost-calibration.json" \
  --command "SAMPLE=${SAMPLE:-8} DTYPES=\"${DTYPES:-bf16}\" FIT=$fit_suite HOLDOUT=$holdout_suite scripts/gpu-fit-cost.sh" \
  | tee "$OUT/fit-cost.txt" || status=1
exit "$status"
