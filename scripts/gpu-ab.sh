#!/usr/bin/env bash
# A/B on the GPU machine: the public suite, BF16 and FP8, for a baseline source tree and this
# one, alternating runs (baseline, this, baseline, this, ...) so drift in clocks or temperature
# falls on both. Each run is `autogemm bench` (ours against cuBLASLt in one process), so the
# figure compared is the same-run ratio to cuBLASLt.
#   BEFORE=<tree> [ROUNDS=2] [SUITE=bench/suites/gemm-public.csv] [DTYPES="bf16 fp8"]
#   [ROWS="--suite"] scripts/gpu-ab.sh
# ROWS is the bench option that takes the suite: `--wgrad` for the weight-gradient suites (with
# DTYPES=bf16), `--grouped` for grouped ones. BENCH_ARGS adds options to every run (a fused
# epilogue: BENCH_ARGS="--bias bf16 --activation gelu_tanh").
# <tree> is a copy of the baseline's sources (e.g. `git archive <commit> | tar -x -C <tree>`),
# carried to the machine. The CSVs go to $OUT as {before,after}-{bf16,fp8}-<round>.csv (the
# device tool brings back 8 files: two rounds), the logs to /tmp/ab-logs.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
: "${BEFORE:?set BEFORE to the baseline source tree}"
rounds=${ROUNDS:-2}
suite=${SUITE:-bench/suites/gemm-public.csv}
logs=/tmp/ab-logs
mkdir -p $logs
build() {   # build <source dir> <build dir>
  { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAUTOGEMM_BUILD_TESTS=OFF &&
    cmake --build "$2" -j "$(nproc)"; } > "$logs/build-$(basename "$2").log" 2>&1 ||
    { tail -40 "$logs/build-$(basename "$2").log"; exit 1; }
}
build "$BEFORE" /tmp/ab-before
build . /tmp/ab-after
for round in $(seq 1 "$rounds"); do
  for dtype in ${DTYPES:-bf16 fp8}; do
    for side in before after; do
      AUTOGEMM_CACHE_DIR=/tmp/ab-cache-$side /tmp/ab-$side/src/cli/autogemm bench \
        ${ROWS:---suite} "$suite" --dtype "$dtype" --csv "$OUT/$side-$dtype-$round.csv" \
        ${BENCH_ARGS:-} > "$logs/$side-$dtype-$round.log" 2>&1
      echo "$side $dtype round $round: $(grep 'geomean ratio' "$logs/$side-$dtype-$round.log")"
    done
  done
done
