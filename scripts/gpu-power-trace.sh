#!/usr/bin/env bash
# Board power, SM clock and the driver's clock-limit reasons while one shape runs: ours alone,
# cuBLASLt alone (`--config cuBLASLt`), then both interleaved as the bench times them.
# nvidia-smi samples every 20 ms into $OUT/power-trace.csv; each phase's wall-clock window goes
# to $OUT/power-phases.txt; scripts/power_trace_summary.py prints the busy samples per phase.
# Run after `scripts/gpu-run.sh profile` (it builds build-gpu).
#   SHAPE="--m 4096 --n 7168 --k 16384" DTYPE=fp8 ITERS=6000 scripts/gpu-power-trace.sh
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
shape=${SHAPE:---m 4096 --n 7168 --k 16384}
dtype=${DTYPE:-fp8}
iters=${ITERS:-6000}
trace="$OUT/power-trace.csv"
phases="$OUT/power-phases.txt"

# The limit reasons were renamed from clocks_throttle_reasons to clocks_event_reasons in
# driver 535; ask for whichever this driver knows.
fields=timestamp,power.draw,power.draw.instant,enforced.power.limit,clocks.sm,clocks.max.sm
fields+=,temperature.gpu,clocks_event_reasons.sw_power_cap,clocks_event_reasons.hw_slowdown
fields+=,clocks_event_reasons.sw_thermal_slowdown
if ! nvidia-smi --query-gpu="$fields" --format=csv,noheader > /dev/null 2>&1; then
  fields=${fields//clocks_event_reasons/clocks_throttle_reasons}
  fields=${fields//,power.draw.instant/}
fi
nvidia-smi -q -d POWER,CLOCK,PERFORMANCE,TEMPERATURE > "$OUT/power-smi-q.txt" 2>&1
nvidia-smi --query-gpu="$fields" --format=csv -lms 20 > "$trace" 2>&1 &
sampler=$!
now() { date '+%Y/%m/%d %H:%M:%S.%3N'; }
: > "$phases"
phase() {   # phase NAME COMMAND...
  local name=$1; shift
  local start; start=$(now)
  "$@" >> "$OUT/power-bench.log" 2>&1
  echo "$name|$start|$(now)" >> "$phases"
}
sleep 1
phase idle sleep 2
phase ours timeout 120 $bin bench $shape --dtype "$dtype" --no-baseline --iters "$iters"
phase idle-after-ours sleep 2
phase cublaslt timeout 120 $bin bench $shape --dtype "$dtype" --no-baseline --iters "$iters" \
  --config cuBLASLt
phase idle-after-cublaslt sleep 2
phase interleaved timeout 240 $bin bench $shape --dtype "$dtype" --iters "$iters"
kill "$sampler"
wait "$sampler" 2> /dev/null
python3 scripts/power_trace_summary.py "$trace" "$phases" | tee "$OUT/power-summary.txt"
