#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test. Without a GPU
# the GPU tests are reported as skipped with the reason.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
ctest --test-dir "${AUTOGEMM_BUILD_DIR:-build}" --output-on-failure -j "$(nproc)"
