#!/usr/bin/env bash
# Weight gradients on the GPU machine (issue 52): builds build-gpu (scripts/gpu-run.sh profile),
# runs the weight-gradient tests (Wgrad*: dense and grouped along the tokens, GPU and host), then
# benches the dense suite against cuBLASLt and the experts' suite against the per-expert
# cuBLASLt loop (one CUDA graph). Files in $OUT: build.log, profile.json.txt, wgrad-tests.log,
# wgrad-dense.log / .csv, wgrad-moe.log / .csv.
#   SUITES="dense moe" picks the benches; BENCH_ARGS adds options to both; TEST_TIMEOUT and
#   BENCH_TIMEOUT in seconds. The experts' suite runs in about 45 s on an H200, the dense one in
#   about a minute; a cold machine's build takes about 70 s more.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export OUT
scripts/gpu-run.sh profile || exit 1
# NVRTC's own cubin cache would skip ptxas, whose register report some tests parse; the test
# binary, not ctest (scripts/gpu-grouped.sh says why).
CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-240}" build-gpu/tests/autogemm_tests \
  --gtest_filter='Wgrad*' > "$OUT/wgrad-tests.log" 2>&1
status=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$OUT/wgrad-tests.log" | head -30
for suite in ${SUITES:-dense moe}; do
  timeout "${BENCH_TIMEOUT:-300}" $bin bench --wgrad "bench/suites/wgrad-$suite.csv" \
    --csv "$OUT/wgrad-$suite.csv" ${BENCH_ARGS:-} > "$OUT/wgrad-$suite.log" 2>&1
  rc=$?
  grep -E "geomean|FAILED|lowest" "$OUT/wgrad-$suite.log"
  echo "wgrad-$suite: exit $rc"
  ((rc == 0)) || status=1
done
exit $status
