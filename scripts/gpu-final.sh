#!/usr/bin/env bash
# One call that produces every figure docs/perf/README.md quotes: tests, warmup timings,
# ladder, BF16 and FP8 suites (planner, then autotuned). Packs the logs into $OUT/results.tgz
# (the device tool returns at most 8 files).
set -uo pipefail
cd "$(dirname "$0")/.."
final="${OUT:-/tmp/autogemm-out}"
export OUT=/tmp/autogemm-final
rm -rf "$OUT"; mkdir -p "$OUT"
bash scripts/gpu-run.sh profile tests warmup ladder bench > "$OUT/run.log" 2>&1
mv "$OUT/bench.csv" "$OUT/bench-bf16.csv"; mv "$OUT/bench.log" "$OUT/bench-bf16.log"
BENCH_ARGS='--autotune 6' bash scripts/gpu-run.sh bench > /dev/null 2>&1
mv "$OUT/bench.csv" "$OUT/bench-bf16-autotune.csv"; mv "$OUT/bench.log" "$OUT/bench-bf16-autotune.log"
BENCH_ARGS='--dtype fp8' bash scripts/gpu-run.sh bench > /dev/null 2>&1
mv "$OUT/bench.csv" "$OUT/bench-fp8.csv"; mv "$OUT/bench.log" "$OUT/bench-fp8.log"
BENCH_ARGS='--dtype fp8 --autotune 6' bash scripts/gpu-run.sh bench > /dev/null 2>&1
mv "$OUT/bench.csv" "$OUT/bench-fp8-autotune.csv"; mv "$OUT/bench.log" "$OUT/bench-fp8-autotune.log"
tar -C "$OUT" -czf "$final/results.tgz" .
grep -E "^\[  (PASSED|FAILED) |tests ran" "$OUT/gpu-tests.log" | head -20
tail -2 "$OUT/warmup-cold.log" "$OUT/warmup-warm.log"
for f in bench-bf16 bench-bf16-autotune bench-fp8 bench-fp8-autotune; do
  echo "$f: $(grep geomean "$OUT/$f.log")"; grep "copy bandwidth" "$OUT/$f.log"; done
tail -12 "$OUT/ladder.log"
