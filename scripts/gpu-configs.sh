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
  rm -f /tmp/one.csv
  "$bin" bench --dtype "${DTYPE:-bf16}" --m "$m" --n "$n" --k "$k" --config "$config" --iters "${ITERS:-20}" ${BENCH_EXTRA:-} --csv /tmp/one.csv >/dev/null 2>/tmp/one.err
  # A row that FAILED (exit 1) still has its CSV line, which says why; without a CSV the command
  # itself stopped (a refused --config: exit 2). The columns are read by header name
  # (bench_csv_rows.awk), so columns added to the CSV cannot shift them.
  if [[ -s /tmp/one.csv ]]; then
    awk -f scripts/bench_csv_rows.awk /tmp/one.csv || head -3 /tmp/one.err
  else
    echo "FAILED"; head -3 /tmp/one.err
  fi
done < "$1"
