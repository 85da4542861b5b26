#!/usr/bin/env bash
# Issue 50 on the GPU machine: the fused epilogue's GPU tests and its cost. Builds build-gpu as
# scripts/gpu-run.sh does, then the parts asked for (default: tests bench):
#   tests  EpilogueGpu* (every activation, bias type, output type, store path, swapped operands,
#          split-K, the ladder's steps, the decode family)             -> epilogue-tests.log
#   bench  per suite (SUITES, default gemm-public gemm-decode) and epilogue (EPILOGUES, `;`
#          between them, each the bench's options), `autogemm bench --json`: ours fused against
#          our plain GEMM (what fusing costs), our plain GEMM then the epilogue as a second
#          kernel (what it saves) and cuBLASLt's own fused epilogue where it has one (bias,
#          relu, gelu_tanh)                                            -> epilogue-SUITE-N.json
#          Every row's kernels are compiled first, in parallel processes (untimed).
# One line per bench run: the fused / unfused geomean, the largest cost at M >= 4096, the geomean
# ratio to cuBLASLt's fused epilogue and its lowest row, and failed rows.
#   scripts/gpu-epilogue.sh [tests] [bench]
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
scripts/gpu-run.sh profile || exit 1
parts=("$@")
((${#parts[@]})) || parts=(tests bench)
epilogues="${EPILOGUES:---bias bf16 --activation gelu_tanh;--bias bf16;--bias fp32 --activation silu --row-scale --col-scale}"
status=0
for part in "${parts[@]}"; do
  case "$part" in
    tests)
      start=$SECONDS
      CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests \
        --gtest_filter="${GTEST_FILTER:-EpilogueGpu*}" > "$OUT/epilogue-tests.log" 2>&1 || status=1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure" "$OUT/epilogue-tests.log" | head -20
      echo "  tests: $((SECONDS - start)) s" ;;
    bench)
      IFS=';' read -ra variants <<< "$epilogues"
      start=$SECONDS
      for suite in ${SUITES:-gemm-public gemm-decode}; do   # compile every kernel first
        for v in "${variants[@]}"; do
          # shellcheck disable=SC2086
          $bin bench --suite "bench/suites/$suite.csv" $v --warmup 0 --iters 1 --no-baseline \
            > /dev/null 2>&1 &
        done
      done
      wait
      echo "  compiled: $((SECONDS - start)) s"
      for suite in ${SUITES:-gemm-public gemm-decode}; do
        i=0
        for v in "${variants[@]}"; do
          file="$OUT/epilogue-$suite-$i.json"
          # shellcheck disable=SC2086
          timeout "${BENCH_TIMEOUT:-300}" $bin bench --suite "bench/suites/$suite.csv" $v --json \
            > "$file" 2> "$OUT/epilogue-$suite-$i.err" || status=1
          python3 - "$file" "$suite" "$v" <<'PY' || status=1
import json, sys
b = json.load(open(sys.argv[1]))
e, s = b.get("epilogue", {}), b["summary"]
rows = b["rows"]
failed = [f"{r['m']}x{r['n']}x{r['k']}: {r['failure']}" for r in rows if "failure" in r]
line = (f"{sys.argv[2]} [{sys.argv[3]}]: unfused/fused {e.get('geomean_unfused_over_fused', 0):.3f}"
        f" over {e.get('rows', 0)} rows")
if e.get("compute_bound_rows"):
    line += (f"; largest cost at M >= 4096 {100 * e['max_compute_bound_overhead']:+.1f}%"
             f" ({e['max_overhead_shape']})")
if s["rows_compared"]:
    line += (f"; cuBLASLt fused: geomean {s['geomean_ratio']:.3f}, lowest {s['lowest_ratio']:.3f}"
             f" at {s['lowest_shape']}")
line += f"; failed {len(failed)}"
print(line)
for f in failed[:5]:
    print("   ", f)
sys.exit(1 if failed else 0)
PY
          i=$((i + 1))
        done
      done ;;
    *) echo "unknown part $part (tests, bench)"; exit 2 ;;
  esac
done
exit "$status"
