#!/usr/bin/env bash
# Issue 49 parts 3 and 4 on the GPU machine: tuning that cannot lose to cuBLASLt, exported to one
# file, and the bench's suite summary. Builds build-gpu as scripts/gpu-run.sh does, then
#  - the GPU tests of autotuning with cuBLASLt, tuning files and the record
#    (TuningFileGpu*, TuningRecordGpu*)                                 -> tune-tests.log
#  - per suite (SUITES, default gemm-public gemm-decode) and dtype (DTYPES, default bf16):
#    `autogemm tune --suite S --export F` with an empty cache        -> tune-S-D.txt, tuning-S-D.json
#    then a fresh process, `autogemm bench --suite S --json` with AUTOGEMM_TUNING_FILE=F, the
#    tuning record off and another empty cache                        -> bench-S-D.json
# One line per suite: the bench's summary (geomean ratio to cuBLASLt, lowest row, rows below
# 0.95 and below 1.00, median prediction error), the rows cuBLASLt won, and how far the fresh
# process's times are from the tuned ones (median and largest |bench / tuned - 1|).
# The target (issue 49): no row below 1.00 of cuBLASLt, and the fresh process within noise.
#   scripts/gpu-tune.sh
#   SUITES=gemm-decode DTYPES="bf16 fp8" CANDIDATES=8 scripts/gpu-tune.sh
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
scripts/gpu-run.sh profile || exit 1
status=0
start=$SECONDS
CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests \
  --gtest_filter="${GTEST_FILTER:-TuningFileGpu*:TuningRecordGpu*}" \
  > "$OUT/tune-tests.log" 2>&1 || status=1
grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure" "$OUT/tune-tests.log" | head -20
echo "  tests: $((SECONDS - start)) s"

for suite in ${SUITES:-gemm-public gemm-decode}; do
  for dtype in ${DTYPES:-bf16}; do
    name="$suite-$dtype"
    file="$OUT/tuning-$name.json"
    t0=$SECONDS
    tune_cache=$(mktemp -d) bench_cache=$(mktemp -d)
    AUTOGEMM_CACHE_DIR=$tune_cache $bin tune --suite "bench/suites/$suite.csv" --dtype "$dtype" \
      --candidates "${CANDIDATES:-8}" --export "$file" > "$OUT/tune-$name.txt" 2>&1 || status=1
    AUTOGEMM_TUNING_RECORD=0 AUTOGEMM_TUNING_FILE="$file" AUTOGEMM_CACHE_DIR=$bench_cache \
      $bin bench --suite "bench/suites/$suite.csv" --dtype "$dtype" --json \
      > "$OUT/bench-$name.json" 2>> "$OUT/tune-$name.txt" || status=1
    rm -rf "$tune_cache" "$bench_cache"
    python3 - "$file" "$OUT/bench-$name.json" "$name" "$((SECONDS - t0))" <<'PY' || status=1
import json, re, statistics, sys
entries = json.load(open(sys.argv[1]))["entries"]
bench = json.load(open(sys.argv[2]))
tuned = {}
for e in entries:
    m = re.search(r"\|m=(\d+);n=(\d+);k=(\d+);", e["key"])
    tuned[tuple(map(int, m.groups()))] = e
s = bench["summary"]
rows = [r for r in bench["rows"] if "ratio" in r and "failure" not in r]
below_one = [r for r in rows if r["ratio"] < 1.0]
spread = [abs(r["time_us"] / tuned[(r["m"], r["n"], r["k"])]["time_us"] - 1) for r in bench["rows"]
          if (r["m"], r["n"], r["k"]) in tuned and r.get("time_us")]
vendor = sum(1 for e in entries if e["config"] == "cuBLASLt")
print(f'  {sys.argv[3]:24} geomean {s["geomean_ratio"]:.3f}, lowest {s.get("lowest_ratio", 0):.3f} at '
      f'{s.get("lowest_shape", "-")}, {s["rows_below_low_ratio"]} below 0.95, {len(below_one)} below 1.00 '
      f'of {s["rows_compared"]}; median prediction error {100 * s["median_prediction_error"]:.1f}%; '
      f'cuBLASLt won {vendor} of {len(entries)}; fresh process vs tuned: median '
      f'{100 * statistics.median(spread) if spread else 0:.1f}%, largest {100 * max(spread, default=0):.1f}% '
      f'({sys.argv[4]} s)')
for r in below_one:
    print(f'    below 1.00: {r["m"]}x{r["n"]}x{r["k"]} {r["ratio"]:.3f} ({r["config"]})')
PY
  done
done
exit $status
