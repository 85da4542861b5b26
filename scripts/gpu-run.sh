#!/usr/bin/env bash
# Everything the GPU machine does in one call (see docs/perf/README.md): build, GPU tests,
# profile, ladder, benchmark. Logs go to $OUT (at most 8 files come back).
#   scripts/gpu-run.sh [tests|ladder|bench|profile ...]   (default: all)
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
build=build-gpu
# A warm machine keeps build-gpu between calls, but the synced sources can carry older mtimes
# than its objects, so ninja would keep a stale build and time old code. Rebuild whenever
# the sources' content changed since the last build.
stamp=$(find CMakeLists.txt cmake include src tests bench -type f -print0 | sort -z | xargs -0 cat | sha1sum | cut -c1-40)
if [[ -f $build/.source-stamp && "$(cat $build/.source-stamp)" != "$stamp" ]]; then
  find CMakeLists.txt cmake include src tests bench -type f -exec touch {} +
fi
{ cmake -S . -B $build -G Ninja -DCMAKE_BUILD_TYPE=Release && cmake --build $build -j "$(nproc)"; } \
  > "$OUT/build.log" 2>&1 || { tail -60 "$OUT/build.log"; exit 1; }
echo "$stamp" > $build/.source-stamp
bin=$build/src/cli/autogemm
steps=("$@")
((${#steps[@]})) || steps=(profile tests warmup ladder bench)
for step in "${steps[@]}"; do
  case "$step" in
    profile)
      { nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,power.limit,temperature.gpu --format=csv
        date -u; $bin profile --json; } > "$OUT/profile.json.txt" 2>&1 ;;
    tests)
      # NVRTC 12.9+ keeps its own cubin cache once a driver is present; a hit skips ptxas, so
      # the log has no "Used N registers" report and the tests that parse it fail on a warm
      # machine (NVIDIA/cuda-python#1124). CI has no driver, hence no such cache.
      CUDA_CACHE_DISABLE=1 timeout ${TEST_TIMEOUT:-300} $build/tests/autogemm_tests --gtest_filter="${GTEST_FILTER:-*}" > "$OUT/gpu-tests.log" 2>&1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |FAILED|Failure|error" "$OUT/gpu-tests.log" | head -40 ;;
    warmup)
      # Cold: an empty cache directory, every kernel compiled by NVRTC. Warm: a new process
      # loads the same kernels from the disk cache.
      rm -rf /tmp/autogemm-warmup-cache
      AUTOGEMM_CACHE_DIR=/tmp/autogemm-warmup-cache $bin warmup --suite bench/suites/gemm-public.csv > "$OUT/warmup-cold.log" 2>&1
      AUTOGEMM_CACHE_DIR=/tmp/autogemm-warmup-cache $bin warmup --suite bench/suites/gemm-public.csv > "$OUT/warmup-warm.log" 2>&1
      tail -n 3 "$OUT/warmup-cold.log" "$OUT/warmup-warm.log" ;;
    ladder)
      AUTOGEMM_LOG=${LADDER_LOG:-2} timeout ${LADDER_TIMEOUT:-150} $bin ladder --csv "$OUT/ladder.csv" 2>&1 | tee "$OUT/ladder.log" ;;
    bench)
      timeout ${BENCH_TIMEOUT:-200} $bin bench --suite bench/suites/gemm-public.csv --csv "$OUT/bench.csv" ${BENCH_ARGS:-} 2>&1 | tee "$OUT/bench.log" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
