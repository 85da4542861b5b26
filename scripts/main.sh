#!/usr/bin/env bash
# The README's main command: installs what is missing, builds, profiles the machine and runs the
# benchmark over the public shape suite against cuBLASLt (on a machine without a GPU the bench
# shows the plan for an H100 and says why it cannot measure).
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
bin="${AUTOGEMM_BUILD_DIR:-build}/src/cli/autogemm"
"$bin" profile
"$bin" bench --suite bench/suites/gemm-public.csv "$@"
