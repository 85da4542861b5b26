#!/usr/bin/env bash
# Issue 26 on the GPU machine: one GEMM split over all visible GPUs on NCCL, and the scheduler
# for many GEMMs. Builds build-gpu the way scripts/gpu-run.sh does (its `profile` step:
# build.log, profile.json.txt, which holds the measured peer links when there are 2+ GPUs), then
#  - the multi-GPU tests (Multi*: NCCL with one rank on one GPU, every split kind bit for bit;
#    every kind, placement and strategy against the one-GPU result on 2+)   -> multi-tests.log
#  - split GEMM, BF16 16384^3 and 8192 x 28672 x 8192 over G = all visible GPUs, D gathered on
#    GPU 0 and D left sharded, each timed against one GPU, predicted against measured speedup,
#    D checked against the one-GPU result (gathered runs)       -> split.json (a list, one per run)
#  - the scheduler on the 64-GEMM list (public + decode suites, cycled), load, rr and priority,
#    every result checked against GPU 0's single-GPU result                -> schedule.json
# One summary line per run is printed; stderr and notes go to multi.log.
# Files back: build.log, profile.json.txt, multi-tests.log, multi.log, split.json, schedule.json.
#   scripts/gpu-multi.sh
#   GPUS=2 OUTPUTS=sharded SCHEDULE=load,rr SPLIT_ARGS="--split n" scripts/gpu-multi.sh
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
# NVLink multicast is forbidden on these machines (a program using it can take the host's GPUs
# out of service); MultiGpuComm::local forces it to 0 too, this covers any other NCCL user.
export NCCL_NVLS_ENABLE=0
log="$OUT/multi.log"
: > "$log"
configure_nccl "$log"
scripts/gpu-run.sh profile || exit 1
status=0
# Without NCCL the split runs fail (the library says so) and its tests skip; the scheduler needs
# no NCCL, so the run goes on.
if ! grep -qE "AUTOGEMM_NCCL_LIBRARY:FILEPATH=.*libnccl" build-gpu/CMakeCache.txt; then
  echo "FAILED: build-gpu was built without NCCL (the split runs will fail):"
  grep "NCCL" "$OUT/build.log" | head -5
  status=1
fi
gpus=${GPUS:-$(nvidia-smi -L | wc -l)}
echo "GPUs: $gpus ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)); NCCL_NVLS_ENABLE=$NCCL_NVLS_ENABLE"

CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests \
  --gtest_filter="${GTEST_FILTER:-Multi*}" > "$OUT/multi-tests.log" 2>&1 || status=1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure" "$OUT/multi-tests.log" | head -20

summary() {  # one line from a JSON file written by `bench --gpus`
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
if "strategies" in j:
    for s in j["strategies"]:
        c = s.get("check", {})
        print(f'  {s["strategy"]:8} makespan {s.get("makespan_us", 0):9.1f} us, measured ideal {s.get("ideal_us", 0):9.1f} us '
              f'(x{s.get("ratio_to_ideal", 0):.3f}; predicted ideal {s.get("ideal_predicted_us", 0):.1f} us), '
              f'bound {s.get("bound_us", 0):.1f} us, {s.get("migrations", 0)} migrations, '
              f'{c.get("bitwise", 0)} bitwise / {c.get("within_diff", 0)} within / {c.get("failed", 0)} failed')
    if "rr_over_load" in j: print(f'  round-robin / load-balanced makespan: {j["rr_over_load"]:.3f}')
else:
    p = j["problem"]
    print(f'  {p["m"]}x{p["n"]}x{p["k"]} over {j["gpus"]}, D {j["output"]}: {j["chosen"]["kind"]} split, chunks {j["chosen"].get("chunks")}; '
          f'one GPU {j.get("single_gpu_measured_us", 0):.1f} us, split {j.get("split_measured_us", 0):.1f} us: '
          f'speedup {j.get("measured_speedup", 0):.3f} measured, {j["predicted_speedup"] if "predicted_speedup" in j else j["speedup"]:.3f} predicted '
          f'({100 * j.get("prediction_error", 0):+.1f}%); bitwise {j.get("bitwise")}, diff {j.get("diff", 0):.3g}')
PY
}

runs=()
for shape in "16384 16384 16384" "8192 28672 8192"; do
  set -- $shape
  for output in ${OUTPUTS:-root sharded}; do
    json="/tmp/autogemm-split-${1}x${2}x${3}-$output.json"
    rm -f "$json"
    echo "== bench --gpus $gpus --m $1 --n $2 --k $3 --output $output ${SPLIT_ARGS:-}" >> "$log"
    timeout "${SPLIT_TIMEOUT:-240}" "$bin" bench --gpus "$gpus" --m "$1" --n "$2" --k "$3" --output "$output" \
      --json --warmup "${WARMUP:-3}" --iters "${ITERS:-10}" ${SPLIT_ARGS:-} > "$json" 2>> "$log" || status=1
    summary "$json" 2>> "$log" || { echo "split $1x$2x$3 output $output FAILED; the end of $log:"; tail -5 "$log"; }
    runs+=("$json")
  done
done
python3 -c 'import json, sys; print(json.dumps([json.load(open(f)) for f in sys.argv[1:] if open(f).read().strip()], indent=1))' \
  "${runs[@]}" > "$OUT/split.json" 2>> "$log"

echo "== bench --gpus $gpus --schedule ${SCHEDULE:-load,rr,priority} --count 64" >> "$log"
timeout "${SCHEDULE_TIMEOUT:-300}" "$bin" bench --gpus "$gpus" --schedule "${SCHEDULE:-load,rr,priority}" \
  --suite bench/suites/gemm-public.csv,bench/suites/gemm-decode.csv --count "${COUNT:-64}" --json \
  > "$OUT/schedule.json" 2>> "$log" || status=1
summary "$OUT/schedule.json" 2>> "$log" || { echo "schedule FAILED; the end of $log:"; tail -5 "$log"; }
exit $status
