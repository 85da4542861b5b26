#!/usr/bin/env bash
# Tensor-parallel GEMMs (issue 54) on the GPU machine, over all visible GPUs (one rank each).
# Builds build-gpu as scripts/gpu-run.sh does (build.log, profile.json.txt with the measured
# peer links), then the steps asked for (default: tests bench):
#   tests     the tensor-parallel and multi-GPU GPU tests                  -> tp-tests.log
#   bench     bench --gpus N --tp PATTERN, BF16, 16384^3, 8192x28672x8192, 8192x8192x28672, every
#             pattern; one JSON object per run in tp-bench.json, one summary line per run
#             (BENCH_EXTRA="--process-per-rank": torchrun's plan, D staged, in this process)
#   fp8       the same rows block-scaled FP8                               -> tp-bench.json
#   nccl      the same rows on the NCCL transport                          -> tp-bench.json
#   alltests  every other GPU test, sharded over the GPUs: scripts/gpu-check.sh single
#                                                                          -> check-single.log
#   torchrun  the Python package, then bench/tp_torchrun.py under torchrun (ours and PyTorch's
#             in one run; TORCHRUN_ARGS="--trace --iters 4 ..." traces calls back to back
#             instead)                                                     -> torchrun.log
#   trace     AUTOGEMM_TP_TRACE=1 bench of each TRACES entry, PATTERN:MxNxK[:extra bench
#             arguments, commas for spaces] (default all-reduce:16384x16384x16384); TRACE_CALLS
#             calls a timeline (1), TRACE_ITERS timed calls (1)
#                                                                          -> trace.log
#   ab        the bench rows of a baseline source tree (BEFORE=<tree>, e.g. `git archive <commit>
#             | tar -x -C <tree>` in the repository, carried to the machine: its CLI is built
#             beside) and of this one, alternated ROUNDS (2) times so drift falls on both
#                                                                          -> tp-ab.log
# Notes and errors go to tp.log.
#   scripts/gpu-tp.sh tests bench fp8
#   SHAPES="16384x16384x16384" PATTERNS="all-gather" scripts/gpu-tp.sh bench
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
# NVLink multicast is forbidden on these machines; keep it off for every program started here.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
log="$OUT/tp.log"
: > "$log"
configure_nccl "$log"
scripts/gpu-run.sh profile || exit 1
gpus=${GPUS:-$(nvidia-smi -L | wc -l)}
echo "GPUs: $gpus ($(nvidia-smi --query-gpu=name --format=csv,noheader | sort | uniq -c | xargs)); $(nvidia-smi topo -m 2>/dev/null | sed -n 2p | cut -c1-60)"
status=0
shapes=${SHAPES:-16384x16384x16384 8192x28672x8192 8192x8192x28672}
patterns=${PATTERNS:-all-gather reduce-scatter all-reduce}

summary() {  # one line from bench --tp --json
  python3 - "$1" <<'PY'
import json, sys
j = json.load(open(sys.argv[1]))
p = j["problem"]
checks = j.get("ranks_checked", [])
worst = max((c["diff"] for c in checks), default=float("nan"))
d = " direct" if j.get("d_direct") else (" staged" if j["pattern"] in ("all-reduce", "gather") else "")
print(f'  {j["pattern"]:14} {p["m"]}x{p["n"]}x{p["k"]} {p["a_type"]:5} {j["transport"]:11}{d} bands {j["bands"]}: '
      f'one GPU {j.get("single_gpu_measured_us", 0):8.1f} us, tp {j.get("tp_measured_us", 0):8.1f} us '
      f'(predicted {j["predicted_us"]:8.1f}, {100 * j.get("prediction_error", 0):+5.1f}%): speedup '
      f'{j.get("measured_speedup", 0):.2f} (predicted {j["speedup"]:.2f}); ranks ok {j.get("all_ranks_ok")} '
      f'(worst diff {worst:.2g})')
PY
}

bench_rows() {  # $1: extra bench arguments
  for shape in $shapes; do
    IFS=x read -r m n k <<< "$shape"
    for pattern in $patterns; do
      json="/tmp/tp-$pattern-$shape-$RANDOM.json"
      echo "== bench --gpus $gpus --tp $pattern --m $m --n $n --k $k $1" >> "$log"
      timeout "${BENCH_TIMEOUT:-120}" "$bin" bench --gpus "$gpus" --tp "$pattern" --m "$m" --n "$n" --k "$k" \
        --json --warmup "${WARMUP:-3}" --iters "${ITERS:-10}" $1 > "$json" 2>> "$log" || status=1
      summary "$json" 2>> "$log" || { echo "  $pattern $shape $1 FAILED; the end of $log:"; tail -3 "$log"; }
      cat "$json" >> "$OUT/tp-bench.json"
    done
  done
}

steps=("$@")
((${#steps[@]})) || steps=(tests bench)
for step in "${steps[@]}"; do
  case "$step" in
    tests)
      CUDA_CACHE_DISABLE=1 timeout "${TEST_TIMEOUT:-300}" build-gpu/tests/autogemm_tests \
        --gtest_filter="${GTEST_FILTER:-TensorParallel*:Multi*}" > "$OUT/tp-tests.log" 2>&1 || status=1
      grep -E "^\[  (FAILED|PASSED|SKIPPED) |Failure|rank [0-9]" "$OUT/tp-tests.log" | head -30 ;;
    bench) bench_rows "${BENCH_EXTRA:-}" ;;
    ab)
      : "${BEFORE:?set BEFORE to the baseline source tree}"
      nccl_root=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>>"$log")
      [[ -f /usr/local/cuda/include/nccl.h ]] && nccl_root=""
      { cmake -S "$BEFORE" -B /tmp/tp-ab-before -G Ninja -DCMAKE_BUILD_TYPE=Release \
          -DAUTOGEMM_BUILD_TESTS=OFF ${nccl_root:+-DAUTOGEMM_NCCL_ROOT=$nccl_root} &&
        cmake --build /tmp/tp-ab-before -j "$(nproc)" --target autogemm_cli; } >> "$log" 2>&1 ||
        { echo "the baseline did not build; the end of $log:"; tail -5 "$log"; exit 1; }
      for round in $(seq 1 "${ROUNDS:-2}"); do
        for shape in $shapes; do
          IFS=x read -r m n k <<< "$shape"
          for pattern in $patterns; do
            for side in before after; do
              cli=$bin
              [[ $side == before ]] && cli=/tmp/tp-ab-before/src/cli/autogemm
              line=$(AUTOGEMM_CACHE_DIR=/tmp/tp-ab-cache-$side timeout "${BENCH_TIMEOUT:-120}" "$cli" bench \
                       --gpus "$gpus" --tp "$pattern" --m "$m" --n "$n" --k "$k" \
                       --warmup "${WARMUP:-3}" --iters "${ITERS:-10}" 2>> "$log" | grep "^measured")
              echo "$side round $round $pattern $shape: ${line:-FAILED (see tp.log)}" | tee -a "$OUT/tp-ab.log"
            done
          done
        done
      done ;;
    fp8) bench_rows "--dtype fp8" ;;
    nccl) bench_rows "--transport nccl" ;;
    alltests)  # every other GPU test, sharded over the GPUs (scripts/gpu-check.sh single)
      bash scripts/gpu-check.sh single || status=1 ;;
    torchrun)
      # The module is built against the nccl.h of the NCCL that torch loads (the pip wheel's):
      # tp_gemm refuses a header and a library of different versions.
      nccl_root=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>>"$log")
      PY_CMAKE_ARGS="${nccl_root:+-DAUTOGEMM_NCCL_ROOT=$nccl_root}" PY_BUILD=cmake BUILD_TIMEOUT=240 \
        bash scripts/gpu-python.sh build >> "$log" 2>&1 || { echo "python build FAILED"; tail -5 "$log"; status=1; }
      export PYTHONPATH="$PWD/build-gpu-pycmake/python${PYTHONPATH:+:$PYTHONPATH}"
      timeout "${TORCHRUN_TIMEOUT:-300}" torchrun --standalone --nproc_per_node "$gpus" bench/tp_torchrun.py \
        --json "$OUT/torchrun.json" ${TORCHRUN_ARGS:-} > "$OUT/torchrun.log" 2>&1 || status=1
      tail -25 "$OUT/torchrun.log" ;;
    trace)
      for row in ${TRACES:-all-reduce:16384x16384x16384}; do
        IFS=: read -r pattern shape extra <<< "$row"
        IFS=x read -r m n k <<< "$shape"
        echo "== trace --tp $pattern $shape ${extra//,/ }" >> "$OUT/trace.log"
        AUTOGEMM_TP_TRACE=${TRACE_CALLS:-1} timeout "${BENCH_TIMEOUT:-120}" "$bin" bench --gpus "$gpus" \
          --tp "$pattern" --m "$m" --n "$n" --k "$k" --warmup 1 --iters "${TRACE_ITERS:-1}" ${extra//,/ } \
          >> "$OUT/trace.log" 2>&1 || status=1
      done
      grep -c "tp trace" "$OUT/trace.log" ;;
    *) echo "unknown step $step"; exit 2 ;;
  esac
done
exit $status
