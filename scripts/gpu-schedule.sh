#!/usr/bin/env bash
# The multi-GPU scheduler (issue 53) on the GPU machine. Builds build-gpu as scripts/gpu-run.sh
# does (build.log, profile.json.txt with the measured peer links), then
#  - the scheduler's GPU tests (MultiScheduleGpu*: every strategy and placement against one GPU,
#    bit for bit)                                                       -> schedule-tests.log
#  - bench --gpus N --schedule load,rr,priority --json over bench/suites/schedule-64.csv and
#    schedule-512.csv (operands replicated), and the 64-GEMM list with operands on GPU 0 and
#    on the host (copied to the GPU that runs each GEMM); every result checked against GPU 0's
#    single-GPU result; the 64-GEMM list's timeline as an SVG
#                                  -> schedule-64.json, schedule-512.json, schedule-64-root.json,
#                                     schedule-64-host.json, schedule-64.svg
# One summary line per run and strategy: makespan / ideal (measured busy / N), makespan / bound,
# idle % per GPU, host us per GEMM, the start gate and the GEMMs resolved ahead, migrations,
# results checked. Notes and stderr: schedule.log.
# About 1-2 minutes after the build on 4 H200s (the kernels of ~55 distinct shapes compiled
# once, then each list's GEMMs run once per strategy; checking the 512 list's D, about 13 GB per
# GPU, is the longest part).
#   scripts/gpu-schedule.sh
#   GPUS=2 scripts/gpu-schedule.sh
#   SCHEDULE=load,rr LISTS="schedule-64" PLACEMENTS=replicated scripts/gpu-schedule.sh
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
# NVLink multicast is forbidden on these machines; keep it off for every program started here.
export NCCL_NVLS_ENABLE=0
log="$OUT/schedule.log"
: > "$log"
scripts/gpu-run.sh profile || exit 1
gpus=${GPUS:-$(nvidia-smi -L | wc -l)}
echo "GPUs: $gpus ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs))"
status=0
start=$SECONDS

CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-180}" build-gpu/tests/autogemm_tests \
  --gtest_filter="${GTEST_FILTER:-MultiSchedule*:MultiPlacement*:MultiPool*:MultiActivity*:MultiMigration*}" \
  > "$OUT/schedule-tests.log" 2>&1 || status=1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure" "$OUT/schedule-tests.log" | head -20
echo "  tests: $((SECONDS - start)) s"

summary() {  # one line per strategy from a JSON file written by `bench --gpus --suite --json`
  python3 - "$1" "$2" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
for s in j["strategies"]:
    c = s["check"]
    idle = " ".join(f'{100 * g["idle_share"]:.1f}' for g in s["per_gpu"])
    gaps = sum(g["gaps_over_20us"] for g in s["per_gpu"])
    print(f'  {sys.argv[2]:22} {s["strategy"]:8} makespan {s["makespan_us"]:9.1f} us = {s["ratio_to_ideal"]:.3f}x ideal '
          f'({s["ratio_to_bound"]:.3f}x bound); idle % per GPU {idle}; {gaps} gaps > 20 us; '
          f'host {s["host_us_per_gemm"]:.2f} us/GEMM; gate {"on" if s.get("start_gated") else "off"}, '
          f'{s.get("resolved", 0)} resolved ahead; {s["migrations"]} migrations; '
          f'{c["bitwise"]} bitwise / {c["within_diff"]} within / {c["failed"]} failed of {j["gemms"]}')
if "rr_over_load" in j:
    print(f'  {sys.argv[2]:22} round-robin / load-balanced makespan: {j["rr_over_load"]:.3f}')
PY
}

run() {  # run NAME LIST INPUTS [extra args]
  local name=$1 list=$2 inputs=$3; shift 3
  local t0=$SECONDS
  echo "== bench --gpus $gpus --schedule ${SCHEDULE:-load,rr,priority} --suite bench/suites/$list.csv --inputs $inputs $*" >> "$log"
  timeout "${RUN_TIMEOUT:-240}" "$bin" bench --gpus "$gpus" --schedule "${SCHEDULE:-load,rr,priority}" \
    --suite "bench/suites/$list.csv" --inputs "$inputs" --json "$@" > "$OUT/$name.json" 2>> "$log" || status=1
  summary "$OUT/$name.json" "$name" 2>> "$log" || { echo "$name FAILED; the end of $log:"; tail -5 "$log"; }
  echo "  $name: $((SECONDS - t0)) s" >> "$log"
}

for list in ${LISTS:-schedule-64 schedule-512}; do
  if [[ $list == schedule-64 ]]; then
    run "$list" "$list" replicated --plot "$OUT/$list.svg"
  else
    run "$list" "$list" replicated
  fi
done
for inputs in ${PLACEMENTS:-root host}; do
  [[ $inputs == replicated ]] && continue
  run "schedule-64-$inputs" schedule-64 "$inputs"
done
echo "  total after the build: $((SECONDS - start)) s"
exit $status
