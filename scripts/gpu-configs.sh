#!/usr/bin/env bash
# Times forced configurations against cuBLASLt: each line of FILE is "M N K CONFIG..." (CONFIG as
# `autogemm plan` prints it), blank lines and # comments skipped. FILE is any list you write.
# The first timed row of a call runs up to 8% slow on both sides while the clock ramps, so
# start a list with a warm-up row, and compare ratios, not times, across calls.
#   [DTYPE=fp8] [BENCH_EXTRA=--l2-warm] scripts/gpu-configs.sh FILE
#   (after scripts/gpu-run.sh built build-gpu; BENCH_EXTRA: more `autogemm bench` options)
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
while read -r m n k config; do
  [[ -z "$m" || "$m" == \#* ]] && continue
  printf '%s x %s x %s  %-44s ' "$m" "$n" "$k" "$config"
  "$bin" bench --dtype "${DTYPE:-bf16}" --m "$m" --n "$n" --k "$k" --config "$config" --iters "${ITERS:-20}" ${BENCH_EXTRA:-} --csv /tmp/one.csv >/dev/null 2>/tmp/one.err \
    && tail -1 /tmp/one.csv | awk -F, '{printf "%9.1f us %7.1f TFLOP/s  cuBLASLt %9.1f us  ratio %.3f  diff %s  ran %s\n", $(NF-6), $(NF-5), $(NF-3), $(NF-1), $NF, $6}' \
    || { echo "FAILED"; head -3 /tmp/one.err; }
done < "$1"
