#!/usr/bin/env bash
# The whole GPU test set on the GPU machine, to run before a change to device code, planning,
# launch or the bindings lands. Builds build-gpu (scripts/gpu-run.sh profile: build.log,
# profile.json.txt), then the parts asked for (default: multi single python):
#   multi   the multi-GPU and tensor-parallel C++ tests on all visible GPUs at once (they skip,
#           saying why, with fewer GPUs than they need)                   -> check-multi.log
#   single  every other C++ test, sharded by test name over the visible GPUs, one process per
#           GPU (CUDA_VISIBLE_DEVICES=i): on one GPU the set runs about 12 minutes, past one
#           device call; on 4 H200s about 3.5                             -> check-single.log
#   python  the Python package built and tests/python run on the GPU (scripts/gpu-python.sh
#           build tests: torch, CuPy, JAX, grouped, distributed)  -> python-build.log, pytest.log
# The Python build runs from the start beside the C++ parts, and on one GPU the multi part beside
# the single part's shards (the timing tests still run alone, after both).
# Prints one line per part (passed, or what failed); exits 1 when a part failed.
#   scripts/gpu-check.sh [multi] [single] [python]
#   TEST_TIMEOUT=300 seconds per part (a device call has 600: on a cold machine build first,
#   `scripts/gpu-run.sh profile`, then the parts in calls of their own)
#   PROCS=3: the single part in 3 processes per GPU (compile-bound: one GPU's set in one call);
#   the tests that judge timings then run alone after them
#   SHARDS=2 SHARD=0 scripts/gpu-check.sh single: the single part cut into SHARDS shards (default:
#   one per GPU) and only shard SHARD run, over the GPUs: one GPU's 12 minutes in two calls
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
export OUT
bash scripts/gpu-run.sh profile || exit 1
parts=("$@")
((${#parts[@]})) || parts=(multi single python)
gpus=$(nvidia-smi -L | wc -l)
multi_tests="TensorParallel*:Multi*"
# Tests that judge the GPU's timings: with PROCS > 1 they run alone after the shards (sharing
# the GPU, BenchTimingGpu's seats once differed by 8.2% where 8% is allowed).
timing_tests="BenchTimingGpu.*:GemmGpu.HostCostPerCall"
status=0
has_part() { [[ " ${parts[*]} " == *" $1 "* ]]; }

# Beside the single part's shards, which are NVRTC-bound (one core each) and leave the GPU and
# most cores idle: the Python package's build (CPU only), and on one GPU the multi part, whose
# tests there mostly skip and judge no timings (on one H200 they took 75 s and the build about
# 40 s of a 560-second set run one after the other). With more GPUs the multi part runs first,
# alone: its tests take every GPU at once.
multi_beside=0
((gpus == 1)) && has_part multi && has_part single && multi_beside=1
py_build_pid=""
if has_part python; then
  BUILD_TIMEOUT="${BUILD_TIMEOUT:-240}" bash scripts/gpu-python.sh build > /tmp/check-py-build.out 2>&1 &
  py_build_pid=$!
fi
run_multi() {
  # NVRTC's own cubin cache would skip ptxas, whose register report some tests parse
  # (scripts/gpu-run.sh says more); the binary, not ctest (scripts/gpu-grouped.sh says why).
  CUDA_CACHE_DISABLE=1 AUTOGEMM_CACHE_DIR=/tmp/autogemm-cache-multi timeout "${TEST_TIMEOUT:-300}" \
    build-gpu/tests/autogemm_tests --gtest_filter="$multi_tests" > "$OUT/check-multi.log" 2>&1
}
multi_pid=""

# "passed" or the failed tests of a gtest log, and whether it ran to the end.
report() {  # report PART LOG EXIT
  grep -E "^\[  (PASSED|FAILED|SKIPPED) +\] [0-9]+ tests?" "$2" | sed "s/^/$1: /"
  grep -E "^\[  FAILED  \] [A-Za-z]" "$2" | sort -u | head -20
  (($3 == 124)) && echo "$1: ran past ${TEST_TIMEOUT:-300} s"
  echo "$1: exit $3"
  (($3 == 0)) || status=1
}

for part in "${parts[@]}"; do
  case "$part" in
    multi)
      if ((multi_beside)); then continue; fi   # run and reported with the single part
      run_multi
      report multi "$OUT/check-multi.log" $? ;;
    single)
      # Sharded by test name, not GTEST_TOTAL_SHARDS: tests that rerun the binary would inherit
      # it. Each shard its own kernel cache, so no two processes write one entry.
      alone=""
      ((${PROCS:-1} > 1)) && alone=":$timing_tests"
      build-gpu/tests/autogemm_tests --gtest_list_tests --gtest_filter="-$multi_tests$alone" |
        awk '/^[^ ]/ {suite=$1} /^  / {print suite $1}' > /tmp/check-single.txt
      shards=${SHARDS:-$gpus}
      if [[ -n "${SHARD:-}" ]]; then  # one shard of the set, over the GPUs
        awk -v n="$shards" -v s="$SHARD" 'NR % n == s' /tmp/check-single.txt > /tmp/check-shard.txt
        mv /tmp/check-shard.txt /tmp/check-single.txt
      fi
      # PROCS processes per GPU: the set is mostly NVRTC compiles, one core each, so on one GPU
      # several processes finish it sooner (4: one H200's set in ~4.5 minutes); the tests that
      # judge timings then run alone afterwards.
      procs=$(( gpus * ${PROCS:-1} ))
      shard_pids=()
      for ((i = 0; i < procs; i++)); do
        filter=$(awk -v n="$procs" -v i="$i" 'NR % n == i' /tmp/check-single.txt | paste -sd:)
        CUDA_VISIBLE_DEVICES=$((i % gpus)) CUDA_CACHE_DISABLE=1 AUTOGEMM_CACHE_DIR=/tmp/autogemm-cache-$i \
          timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests --gtest_filter="$filter" \
          > "/tmp/check-single-$i.log" 2>&1 &
        shard_pids+=($!)
      done
      if ((multi_beside)); then run_multi & multi_pid=$!; fi
      rc=0
      for job in "${shard_pids[@]}"; do wait "$job" || rc=$?; done
      if [[ -n "$multi_pid" ]]; then   # before the timing tests: they need the GPU alone
        wait "$multi_pid"
        report multi "$OUT/check-multi.log" $?
      fi
      logs=$procs
      if [[ -n "$alone" && "${SHARD:-0}" == 0 ]]; then   # the timing tests, the GPU to themselves
        CUDA_CACHE_DISABLE=1 AUTOGEMM_CACHE_DIR=/tmp/autogemm-cache-0 \
          timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests --gtest_filter="$timing_tests" \
          > "/tmp/check-single-$procs.log" 2>&1 || rc=$?
        logs=$((procs + 1))
      fi
      : > "$OUT/check-single.log"
      for ((i = 0; i < logs; i++)); do
        if ((i < procs)); then echo "== shard $i (GPU $((i % gpus)))" >> "$OUT/check-single.log"
        else echo "== the timing tests, alone" >> "$OUT/check-single.log"; fi
        cat "/tmp/check-single-$i.log" >> "$OUT/check-single.log"
        grep -qE "^\[  PASSED  \]" "/tmp/check-single-$i.log" &&
          ! grep -qE "^\[  FAILED  \]" "/tmp/check-single-$i.log" || { ((rc)) || rc=1; }
      done
      report single "$OUT/check-single.log" "$rc" ;;
    python)
      wait "$py_build_pid"
      rc=$?
      cat /tmp/check-py-build.out
      ((rc == 0)) && { TEST_TIMEOUT="${TEST_TIMEOUT:-300}" bash scripts/gpu-python.sh tests; rc=$?; }
      echo "python: exit $rc"
      ((rc == 0)) || status=1 ;;
    *) echo "unknown part $part (multi, single, python)"; exit 2 ;;
  esac
done
exit "$status"
