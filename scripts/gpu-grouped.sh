#!/usr/bin/env bash
# The grouped (mixture-of-experts) GEMM on the GPU machine (issue 23): builds build-gpu (through
# scripts/gpu-run.sh, which also writes the GPU's profile), runs the grouped tests (Grouped*:
# the library's and the bench's, GPU and host), then benchmarks the public grouped
# suite, ours against the per-group cuBLASLt loop and cublasGemmGroupedBatchedEx. Files in $OUT:
# build.log, profile.json.txt, grouped-tests.log, grouped-bench.log, grouped-bf16.csv.
#   BENCH_ARGS="--iters 50" adds options to the bench; TEST_TIMEOUT / BENCH_TIMEOUT in seconds.
# A warm machine rebuilds only what changed; on a cold one the build may take most of a 10-minute
# call: run `scripts/gpu-run.sh profile` first, then this.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export OUT
scripts/gpu-run.sh profile || exit 1
# NVRTC's own cubin cache would skip ptxas, whose register report some tests parse
# (scripts/gpu-run.sh says more).
# The test binary itself, not ctest: the GPU machine's CMake failed to read the test list that
# gtest_discover_tests wrote there (2026-11-25: "Syntax Error in cmake code" in the generated
# include file), so ctest ran nothing.
CUDA_CACHE_DISABLE=1 timeout ${TEST_TIMEOUT:-240} build-gpu/tests/autogemm_tests \
  --gtest_filter='Grouped*' > "$OUT/grouped-tests.log" 2>&1
tests_rc=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$OUT/grouped-tests.log" | head -30
timeout ${BENCH_TIMEOUT:-300} $bin bench --grouped bench/suites/grouped-moe.csv \
  --csv "$OUT/grouped-bf16.csv" ${BENCH_ARGS:-} > "$OUT/grouped-bench.log" 2>&1
bench_rc=$?
cat "$OUT/grouped-bench.log"
echo "ctest exit $tests_rc, bench exit $bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
