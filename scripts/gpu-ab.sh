#!/usr/bin/env bash
# A/B on the GPU machine: the public suite, BF16 and FP8, for a baseline source tree and this
# one, alternating runs (baseline, this, baseline, this, ...) so drift in clocks or temperature
# falls on both. Each run is `autogemm bench` (ours against cuBLASLt in one process), so the
# figure compared is the same-run ratio to cuBLASLt.
#   BEFORE=<tree> [ROUNDS=2] [SUITE=bench/suites/gemm-public.csv] [DTYPES="bf16 fp8"]
#   [ROWS="--suite"] [GPU=0] [TAG=name] [BUDGET_S=540] scripts/gpu-ab.sh
# ROWS is the bench option that takes the suite: `--wgrad` for the weight-gradient suites (with
# DTYPES=bf16), `--grouped` for grouped ones. BENCH_ARGS adds options to every run (a fused
# epilogue: BENCH_ARGS="--bias bf16 --activation gelu_tanh").
# Several at once, one a GPU (each bench times its own GPU; the builds are shared, under a lock):
#   GPU=0 TAG=pub ... scripts/gpu-ab.sh & GPU=1 TAG=wgrad ROWS=--wgrad ... scripts/gpu-ab.sh; wait
# BUDGET_S: no run starts once the elapsed time plus the longest run so far would pass it, so a
# device call (600 s) returns with the rounds it finished instead of being killed mid-run (a wgrad
# suite run is ~140 s, a public one ~35 s, on an H200).
# <tree> is a copy of the baseline's sources (e.g. `git archive <commit> | tar -x -C <tree>`),
# carried to the machine. The CSVs go to $OUT as [TAG-]{before,after}-{bf16,fp8}-<round>.csv
# (the device tool brings back a few files: tar them if there are many), the logs to
# /tmp/ab-logs.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
: "${BEFORE:?set BEFORE to the baseline source tree}"
rounds=${ROUNDS:-2}
suite=${SUITE:-bench/suites/gemm-public.csv}
budget=${BUDGET_S:-540}
prefix=${TAG:+$TAG-}
logs=/tmp/ab-logs
mkdir -p $logs
[[ -n "${GPU:-}" ]] && export CUDA_VISIBLE_DEVICES=$GPU
start=$SECONDS
build() {   # build <source dir> <build dir>
  { cmake -S "$1" -B "$2" -G Ninja -DCMAKE_BUILD_TYPE=Release -DAUTOGEMM_BUILD_TESTS=OFF &&
    cmake --build "$2" -j "$(nproc)"; } > "$logs/build-$(basename "$2").log" 2>&1 ||
    { tail -40 "$logs/build-$(basename "$2").log"; exit 1; }
}
{
  flock 9
  build "$BEFORE" /tmp/ab-before
  build . /tmp/ab-after
} 9> /tmp/ab-build.lock
longest=0
for round in $(seq 1 "$rounds"); do
  for dtype in ${DTYPES:-bf16 fp8}; do
    for side in before after; do
      if (( SECONDS - start + longest > budget )); then
        echo "${prefix}stopped before $side $dtype round $round: ${budget} s budget ($((SECONDS - start)) s used, runs up to $longest s)"
        exit 0
      fi
      t0=$SECONDS
      name="$prefix$side-$dtype-$round"
      AUTOGEMM_CACHE_DIR=/tmp/ab-cache-$side${GPU:+-$GPU} /tmp/ab-$side/src/cli/autogemm bench \
        ${ROWS:---suite} "$suite" --dtype "$dtype" --csv "$OUT/$name.csv" \
        ${BENCH_ARGS:-} > "$logs/$name.log" 2>&1
      (( SECONDS - t0 > longest )) && longest=$((SECONDS - t0))
      echo "$name: $(grep 'geomean ratio' "$logs/$name.log") ($((SECONDS - t0)) s)"
    done
  done
done
