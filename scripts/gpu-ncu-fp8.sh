#!/usr/bin/env bash
# Nsight Compute on one FP8 prefill kernel: speed of light, memory tables, warp stall reasons
# and the per-instruction (SASS) stall samples, which tell an issue-bound consumer (its own
# integer and FFMA instructions) from one waiting on the tensor pipe. Builds build-gpu if
# needed; writes $OUT/ncu-fp8.txt (sections), $OUT/ncu-fp8-raw.txt (stall metrics),
# $OUT/ncu-fp8-sass-samples.txt (every SASS instruction with its stall samples) and
# $OUT/ncu-fp8-classes.txt (samples by instruction class, scripts/ncu_sass_summary.py).
#   CONFIG="..." M=4096 N=4096 K=7168 scripts/gpu-ncu-fp8.sh
set -u
source "$(dirname "$0")/gpu-env.sh"
b=$bin
[[ -x $b ]] || { cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release > "$OUT/build.log" 2>&1 &&
                 cmake --build build-gpu -j "$(nproc)" >> "$OUT/build.log" 2>&1; } || { tail -40 "$OUT/build.log"; exit 1; }
cfg="${CONFIG:-128x128x128 s5 c2 p g8 cl2x1/b pb2}"
shape=(--m "${M:-4096}" --n "${N:-4096}" --k "${K:-7168}")
$b bench --dtype fp8 "${shape[@]}" --config "$cfg" --iters 3 --warmup 1 > /dev/null 2>&1
rep=/tmp/ncu-fp8
timeout 400 ncu --clock-control none --kernel-name regex:gemm_kernel --launch-skip 2 --launch-count 1 \
  --import-source no --section SpeedOfLight --section ComputeWorkloadAnalysis \
  --section MemoryWorkloadAnalysis --section MemoryWorkloadAnalysis_Tables \
  --section WarpStateStats --section SourceCounters --section InstructionStats -f -o $rep \
  $b bench --dtype fp8 "${shape[@]}" --config "$cfg" --iters 2 --warmup 1 --no-baseline \
  > /tmp/ncu-fp8-run.log 2>&1 || tail -20 /tmp/ncu-fp8-run.log
ncu -i $rep.ncu-rep --print-details all > "$OUT/ncu-fp8.txt" 2>&1
ncu -i $rep.ncu-rep --page source --csv --print-source sass > /tmp/ncu-fp8-sass.csv 2>&1
ncu -i $rep.ncu-rep --page raw --csv > /tmp/ncu-raw.csv 2>&1
python3 - > "$OUT/ncu-fp8-raw.txt" <<'PY'
import csv
rows = list(csv.reader(open('/tmp/ncu-raw.csv')))
if len(rows) >= 3:
    for name, unit, value in zip(rows[0], rows[1], rows[2]):
        if any(s in name for s in ('stall', 'pipe_', 'shared', 'lts__t_', 'tensor', 'inst_executed_pipe')):
            print(f'{name:90s} {unit:12s} {value}')
PY
python3 scripts/ncu_sass_summary.py /tmp/ncu-fp8-sass.csv --listing "$OUT/ncu-fp8-sass-samples.txt" \
  | tee "$OUT/ncu-fp8-classes.txt"
grep -vE "^==PROF==|^\s*$" "$OUT/ncu-fp8.txt" | grep -iE "stall|throughput|pipe|shared|Ipc|Frequency|Duration|Warp Cycles" | head -60
