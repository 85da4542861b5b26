#!/usr/bin/env bash
# The README's test command: installs what is missing, builds, runs every test. Without a GPU
# the GPU tests are reported as skipped with the reason.
#   AUTOGEMM_PYTHON=python3.x  the interpreter the Python package is tested with (default python3)
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/bootstrap.sh
build="${AUTOGEMM_BUILD_DIR:-build}"
# CTest says "(Skipped)" without the reason: scripts/ctest_skips.py prints each reason once.
junit="$(cd "$build" && pwd)/ctest-junit.xml"
ctest_status=0
ctest --test-dir "$build" --output-on-failure -j "$(nproc)" --output-junit "$junit" ||
  ctest_status=$?
python3 scripts/ctest_skips.py "$junit"
((ctest_status == 0)) || exit "$ctest_status"

# The Python package (pyproject.toml, python/): `pip install .` into a fresh virtual
# environment (scikit-build-core builds the wheel from this CMake project), then pytest on
# tests/python. pytest's exit code 5 (no tests collected) fails this script like any other.
python="${AUTOGEMM_PYTHON:-python3}"
venv="$build/python-venv"
rm -rf "$venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check "pytest>=8,<10" "numpy>=1.24"
start=$SECONDS
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check .
echo "python: pip install . (the wheel built from source) took $((SECONDS - start)) s"
status=0
AUTOGEMM_CLI="$build/src/cli/autogemm" "$venv/bin/python" -m pytest tests/python -rs -q \
  -p no:cacheprovider || status=$?
if ((status == 5)); then
  echo "python: pytest collected no tests (exit 5)" >&2
fi
exit "$status"
