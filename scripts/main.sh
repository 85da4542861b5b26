#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, profiles the machine and runs the
# benchmark over the public shape suite against cuBLASLt (on a machine without a GPU the bench
# shows the plan for an H100 and says why it cannot measure). Each case is autotuned over the
# planner's 6 best distinct configurations (AUTOGEMM_AUTOTUNE=0 before the command: the
# planner's choice alone); pass --dtype fp8 for the block-scaled FP8 suite.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bin="${AUTOGEMM_BUILD_DIR:-build}/src/cli/autogemm"
"$bin" profile
"$bin" bench --suite bench/suites/gemm-public.csv --autotune "${AUTOGEMM_AUTOTUNE:-6}" "$@"
