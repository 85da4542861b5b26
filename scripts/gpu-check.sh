#!/usr/bin/env bash
# The whole GPU test set on the GPU machine, to run before a change to device code, planning,
# launch or the bindings lands. Builds build-gpu (scripts/gpu-run.sh profile: build.log,
# profile.json.txt), then the parts asked for (default: both):
#   cpp     every C++ test: the one-GPU ones on GPU 0, grouped, and the multi-GPU and
#           tensor-parallel ones on all visible GPUs (those skip, saying why, with fewer than
#           they need)                                                     -> check-cpp.log
#   python  the Python package built and tests/python run on the GPU (scripts/gpu-python.sh
#           build tests: torch, CuPy, JAX, grouped, distributed)  -> python-build.log, pytest.log
# Prints one line per part (passed, or what failed, and what skipped with why); exits 1 when a
# part failed.
#   scripts/gpu-check.sh [cpp] [python]
#   TEST_TIMEOUT=300 seconds per part (a device call has 600: on a cold machine run
#   `scripts/gpu-run.sh profile` first, then each part in a call of its own)
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export OUT
bash scripts/gpu-run.sh profile || exit 1
parts=("$@")
((${#parts[@]})) || parts=(cpp python)
status=0
for part in "${parts[@]}"; do
  case "$part" in
    cpp)
      # NVRTC's own cubin cache would skip ptxas, whose register report some tests parse
      # (scripts/gpu-run.sh says more); the binary, not ctest (scripts/gpu-grouped.sh says why).
      CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests \
        > "$OUT/check-cpp.log" 2>&1
      rc=$?
      grep -E "^\[  (PASSED|FAILED|SKIPPED) \] [0-9]+ tests?" "$OUT/check-cpp.log"
      grep -E "^\[  FAILED  \] [A-Za-z]" "$OUT/check-cpp.log" | sort -u | head -20
      grep -hA1 ": Skipped$" "$OUT/check-cpp.log" | grep -v -e ": Skipped$" -e "^--$" |
        sort | uniq -c | sort -rn | head -5
      ((rc == 124)) && echo "gpu-check.sh: the C++ tests ran past ${TEST_TIMEOUT:-300} s"
      echo "cpp: exit $rc"
      ((rc == 0)) || status=1
      ;;
    python)
      TEST_TIMEOUT="${TEST_TIMEOUT:-300}" bash scripts/gpu-python.sh build tests
      rc=$?
      echo "python: exit $rc"
      ((rc == 0)) || status=1
      ;;
    *) echo "unknown part $part (cpp, python)"; exit 2 ;;
  esac
done
exit "$status"
