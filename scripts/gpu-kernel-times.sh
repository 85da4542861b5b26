#!/usr/bin/env bash
# Per-kernel GPU time of forced configurations: for each line "M N K CONFIG..." of FILE, runs the
# bench under Nsight Compute (duration only, clocks left alone) and prints the median duration
# of each kernel the call launches (the GEMM and any helper: n-tail kernel, A-scale transpose).
# Event timing sees only a call's sum; this places its time kernel by kernel. BASELINE=1 also
# times cuBLASLt's kernels (and the L2 flush) in the same process.
#   [DTYPE=fp8] scripts/gpu-kernel-times.sh LIST   (after gpu-run.sh built build-gpu)
# LIST is any text file you write: one "M N K CONFIG..." per line, blank lines and # comments
# skipped.
set -uo pipefail
source "$(dirname "$0")/gpu-env.sh"
while read -r m n k config; do
  [[ -z "$m" || "$m" == \#* ]] && continue
  printf '%s x %s x %s  %s\n' "$m" "$n" "$k" "$config"
  timeout 120 ncu --clock-control none --metrics gpu__time_duration.sum --print-units base --csv \
    "$bin" bench --dtype "${DTYPE:-bf16}" --m "$m" --n "$n" --k "$k" --config "$config" \
    --iters "${ITERS:-7}" --warmup 2 $([[ -n "${BASELINE:-}" ]] || echo --no-baseline) > /tmp/kt.csv 2>/tmp/kt.err ||
    { echo "  FAILED"; tail -3 /tmp/kt.err; continue; }
  python3 - /tmp/kt.csv <<'PY'
import csv, statistics, sys
rows = [r for r in csv.reader(l for l in open(sys.argv[1]) if l.startswith('"'))]
head, body = rows[0], rows[1:]
name, value = head.index("Kernel Name"), head.index("Metric Value")
times = {}
for r in body:
    times.setdefault(r[name].split("(")[0], []).append(float(r[value].replace(",", "")))
for kernel, t in times.items():
    print(f"  {kernel:40s} n={len(t):3d}  median {statistics.median(t) / 1000:9.2f} us")
PY
done < "$1"
