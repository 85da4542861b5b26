#!/usr/bin/env bash
# Produces every figure docs/perf/README.md quotes, in two parts that each fit one 10-minute
# device call (default: both):
#   scripts/gpu-final.sh checks    profile, GPU tests, warmup timings, ladder
#   scripts/gpu-final.sh benches   BF16 and FP8 suites, planner's choice then autotuned
# Packs the logs into $OUT/results-<part>.tgz (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
final="${OUT:-/tmp/autogemm-out}"
mkdir -p "$final"
export OUT=/tmp/autogemm-final
parts=("$@")
((${#parts[@]})) || parts=(checks benches)
for part in "${parts[@]}"; do
  rm -rf "$OUT"; mkdir -p "$OUT"
  case "$part" in
    checks)
      bash scripts/gpu-run.sh profile tests warmup ladder > "$OUT/run.log" 2>&1
      grep -E "^\[  (PASSED|FAILED) |tests ran" "$OUT/gpu-tests.log" | head -20
      tail -n 2 "$OUT/warmup-cold.log" "$OUT/warmup-warm.log"
      tail -12 "$OUT/ladder.log" ;;
    benches)
      bash scripts/gpu-run.sh profile > /dev/null 2>&1
      for run in "bf16:" "bf16-autotune:--autotune 6" "fp8:--dtype fp8" "fp8-autotune:--dtype fp8 --autotune 6"; do
        name=${run%%:*}
        BENCH_ARGS="${run#*:}" bash scripts/gpu-run.sh bench > /dev/null 2>&1
        mv "$OUT/bench.csv" "$OUT/bench-$name.csv"; mv "$OUT/bench.log" "$OUT/bench-$name.log"
        echo "bench-$name: $(grep geomean "$OUT/bench-$name.log")"
        grep "copy bandwidth" "$OUT/bench-$name.log"
      done ;;
    *) echo "unknown part $part (checks or benches)"; exit 2 ;;
  esac
  tar -C "$OUT" -czf "$final/results-$part.tgz" .
done
