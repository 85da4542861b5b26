#!/usr/bin/env bash
# Tile traces of forced configurations: for each line "M N K CONFIG..." of FILE, one traced
# bench call (AUTOGEMM_TRACE_TILES, docs/env-vars.md), then the per-round summary of each
# (scripts/tile_trace_summary.py). Writes $OUT/tile-trace.csv and $OUT/tile-trace-summary.txt.
#   [DTYPE=fp8] [BENCH_EXTRA=--l2-warm] scripts/gpu-tile-trace.sh FILE
#   (after gpu-run.sh built build-gpu; FILE is any list you write, as for gpu-configs.sh)
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
trace="$OUT/tile-trace.csv"
rm -f "$trace"
while read -r m n k config; do
  [[ -z "$m" || "$m" == \#* ]] && continue
  AUTOGEMM_TRACE_TILES="$trace" "$bin" bench --dtype "${DTYPE:-bf16}" --m "$m" --n "$n" --k "$k" \
    --config "$config" --iters 2 --warmup 1 --no-baseline ${BENCH_EXTRA:-} > /dev/null 2> /tmp/trace.err ||
    { echo "$m x $n x $k $config FAILED"; head -3 /tmp/trace.err; }
done < "$1"
python3 scripts/tile_trace_summary.py "$trace" | tee "$OUT/tile-trace-summary.txt"
