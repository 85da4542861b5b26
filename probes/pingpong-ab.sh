#!/usr/bin/env bash
# Experiment, one device call (about 8 minutes on an H200): ping-pong consumers and the weight
# gradients' cost model against a baseline tree, then the forced tiles that separate the
# effects. Files in $OUT: ab-*.txt (geomeans), {moe,dense,fused}/*.csv, probe-*.log / .csv.
#   BEFORE=<baseline source tree, e.g. git archive main> probes/pingpong-ab.sh
# 1. the experts' and dense weight-gradient suites, planner's choice on both sides;
# 2. the public suite with a fused bias and gelu_tanh (issue 50's exposed epilogue);
# 3. this tree forced: the experts at 128x128x64 s5 without ping-pong (1.278 of the loop on
#    1c47d05), and FP8 weight gradients with turns (oi) against the planner's 128x160 tile.
source "$(dirname "$0")/ab_util.sh"
ab moe ROUNDS=1 ROWS=--wgrad DTYPES=bf16 SUITE=bench/suites/wgrad-moe.csv
ab dense ROUNDS=1 ROWS=--wgrad DTYPES=bf16 SUITE=bench/suites/wgrad-dense.csv
ab fused ROUNDS=1 DTYPES=bf16 SUITE=bench/suites/gemm-public.csv \
  BENCH_ARGS="--bias bf16 --activation gelu_tanh"
bin=/tmp/ab-after/src/cli/autogemm
probe() {   # probe NAME ARGS...: this tree's bench, its geomean line
  AUTOGEMM_CACHE_DIR=/tmp/ab-cache-after timeout 120 "$bin" bench "${@:2}" \
    --csv "$OUT/probe-$1.csv" > "$OUT/probe-$1.log" 2>&1
  echo "$1: exit $? $(grep -h 'geomean' "$OUT/probe-$1.log" | head -1)"
}
probe moe-s5 --wgrad bench/suites/wgrad-moe.csv --config "128x128x64 s5 c2 p g8"
printf 'm,n,k,tag\n7168,18432,4096,a\n8192,8192,8192,b\n4096,14336,16384,c\n28672,4096,4096,d\n' \
  > /tmp/fp8-rows.csv
for config in "128x160x128 s3 c2 p g8" "128x160x128 s3 c2 p g8 oi" "128x128x128 s4 c2 p g8 oi"; do
  probe "fp8-${config// /_}" --wgrad /tmp/fp8-rows.csv --dtype fp8 --no-baseline \
    --config "$config"
done
