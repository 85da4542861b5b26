# Sourced by the probes' A/B scripts (pingpong-ab.sh, weights-ab.sh): the GPU machine's
# environment, the baseline tree they need, and `ab`, one scripts/gpu-ab.sh run.
set -uo pipefail
source "$(dirname "${BASH_SOURCE[0]}")/../scripts/gpu-env.sh"
: "${BEFORE:?set BEFORE to the baseline source tree}"
export OUT
# ab NAME [VAR=value ...]: one gpu-ab.sh run (at most AB_TIMEOUT seconds, 200 unless set), its
# lines in $OUT/ab-NAME.txt and its CSVs moved to $OUT/NAME.
ab() {
  local name=$1
  shift
  env "$@" timeout "${AB_TIMEOUT:-200}" bash scripts/gpu-ab.sh 2>&1 | tee "$OUT/ab-$name.txt"
  mkdir -p "$OUT/$name" && mv "$OUT"/*.csv "$OUT/$name/" 2>/dev/null
}
