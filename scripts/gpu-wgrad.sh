#!/usr/bin/env bash
# Weight gradients on the GPU machine (issue 52): builds build-gpu (scripts/gpu-run.sh profile),
# runs the weight-gradient tests (Wgrad*: dense and grouped along the tokens, GPU and host; the
# FP8 kernel's Fp8GemmGpu.ScalesPerColumnAndKBlock), then benches the dense suite against
# cuBLASLt, the experts' suite against the per-expert cuBLASLt loop (one CUDA graph) and the
# dense suite in FP8 (1x128 scales on both; cuBLASLt's per-tensor FP8 beside). Files in $OUT:
# build.log, profile.json.txt, wgrad-tests.log, wgrad-<suite>[-fp8].log / .csv.
#   SUITES="dense moe dense:fp8" picks the benches (suite:dtype); BENCH_ARGS adds options to
#   all; TEST_TIMEOUT and
#   BENCH_TIMEOUT in seconds. The experts' suite runs in about 45 s on an H200, the dense one in
#   about a minute, the FP8 one longer (no cuBLASLt D to compare with: 128 rows of each checked
#   against float64, over 45 s); a cold machine's build takes about 70 s more.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export OUT
scripts/gpu-run.sh profile || exit 1
# NVRTC's own cubin cache would skip ptxas, whose register report some tests parse; the test
# binary, not ctest (scripts/gpu-grouped.sh says why).
CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-240}" build-gpu/tests/autogemm_tests \
  --gtest_filter='Wgrad*:Fp8GemmGpu.ScalesPerColumnAndKBlock' > "$OUT/wgrad-tests.log" 2>&1
status=$?
grep -E "^\[  (PASSED|FAILED|SKIPPED) |Failure" "$OUT/wgrad-tests.log" | head -30
for entry in ${SUITES:-dense moe dense:fp8}; do
  suite=${entry%%:*}
  dtype=bf16
  [[ "$entry" == *:* ]] && dtype=${entry#*:}
  name=wgrad-$suite$([[ $dtype == bf16 ]] || echo "-$dtype")
  timeout "${BENCH_TIMEOUT:-300}" $bin bench --wgrad "bench/suites/wgrad-$suite.csv" \
    --dtype "$dtype" --csv "$OUT/$name.csv" ${BENCH_ARGS:-} > "$OUT/$name.log" 2>&1
  rc=$?
  grep -E "geomean|FAILED|lowest" "$OUT/$name.log"
  echo "$name: exit $rc"
  ((rc == 0)) || status=1
done
exit $status
