#!/usr/bin/env bash
# The memory-bound middle (issue 49) on the GPU machine: builds build-gpu, compiles the suite's
# kernels in parallel into the disk cache (`autogemm warmup`, one process per shard: NVRTC is
# single-threaded and the machine has 16 cores), then times bench/suites/gemm-middle.csv in BF16
# and block-scaled FP8 against cuBLASLt and a read of each row's bytes, and the forced
# configurations of probes/middle-configs-{bf16,fp8}.txt. Files in $OUT: middle-{bf16,fp8}.csv,
# middle.log, configs-{bf16,fp8}.log.
#   DTYPES="bf16 fp8" (default) picks the types; CONFIGS=0 skips the forced configurations;
#   SUITE=file times another suite the same way.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
bash scripts/gpu-run.sh profile || exit 1
suite=${SUITE:-bench/suites/gemm-middle.csv}
log="$OUT/middle.log"
warm_in_parallel() {  # warm_in_parallel DTYPE: the suite's planned kernels, 12 shards at once
  local header dir=/tmp/middle-shards
  rm -rf "$dir" && mkdir -p "$dir"
  header=$(grep -v '^#' "$suite" | head -1)
  grep -v '^#' "$suite" | tail -n +2 | awk -v d="$dir" -v h="$header" \
    '{f = d "/" (NR % 12) ".csv"; if (!(f in seen)) {print h > f; seen[f] = 1} print >> f}'
  for f in "$dir"/*.csv; do
    $bin warmup --suite "$f" --dtype "$1" > "$f.log" 2>&1 &
  done
  wait
  cat "$dir"/*.log | grep -E "error|total" >> "$log"
}
for dtype in ${DTYPES:-bf16 fp8}; do
  start=$SECONDS
  warm_in_parallel "$dtype"
  echo "== $dtype: warmup $((SECONDS - start)) s" >> "$log"
  timeout ${BENCH_TIMEOUT:-240} $bin bench --suite "$suite" --dtype "$dtype" \
    --csv "$OUT/middle-$dtype.csv" >> "$log" 2>&1
  grep -iE "geomean|memory-bound" "$log" | tail -3
  if [[ "${CONFIGS:-1}" != 0 && -f probes/middle-configs-$dtype.txt ]]; then
    DTYPE=$dtype timeout ${CONFIGS_TIMEOUT:-200} bash scripts/gpu-configs.sh \
      probes/middle-configs-$dtype.txt > "$OUT/configs-$dtype.log" 2>&1
  fi
done
