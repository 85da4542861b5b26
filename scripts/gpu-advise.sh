#!/usr/bin/env bash
# Issue 25's GPU check: the advisor's predicted decode-step GEMM time against the same GEMMs run
# through autogemm (`autogemm advise --measure`): Llama-3-8B decode at batch 1 and 32, BF16 and
# block-scaled FP8, four runs. Each run's table and stderr go to $OUT/advise.log, its JSON to
# $OUT/advise-<model>-b<batch>-<format>.json; one summary line each is printed. Builds build-gpu
# the way scripts/gpu-run.sh does (it runs its `profile` step: build.log, profile.json.txt).
# Files back: build.log, profile.json.txt, advise.log and the four JSON files (7 of at most 8).
#   scripts/gpu-advise.sh
#   MODEL=llama-3-70b BATCHES="1 8" FORMATS="bf16" ITERS=30 scripts/gpu-advise.sh
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
scripts/gpu-run.sh profile || exit 1
model=${MODEL:-llama-3-8b}
log="$OUT/advise.log"
: > "$log"
status=0
for batch in ${BATCHES:-1 32}; do
  for format in ${FORMATS:-bf16 fp8-block}; do
    json="$OUT/advise-$model-b$batch-$format.json"
    echo "== $bin advise --model $model --batch $batch --measure --formats $format" >> "$log"
    timeout "${ADVISE_TIMEOUT:-120}" "$bin" advise --model "$model" --batch "$batch" --measure \
      --formats "$format" --warmup "${WARMUP:-5}" --iters "${ITERS:-30}" --json-out "$json" \
      ${ADVISE_ARGS:-} >> "$log" 2>&1
    rc=$?
    line=$(grep "^summary: $model decode $format batch $batch:" "$log" | tail -1)
    if ((rc != 0)); then
      status=1
      echo "FAILED (exit $rc): $model decode $format batch $batch; the end of $log:"
      tail -8 "$log"
    else
      echo "${line#summary: }"
    fi
  done
done
exit $status
