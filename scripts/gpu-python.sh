#!/usr/bin/env bash
# The Python package on the GPU machine (../shared/docs/gpu-machine.md): build autogemm._core
# for its preinstalled python3 (torch, CuPy, JAX, nanobind, scikit-build-core; no network) and
# run tests/python with the GPU tests, then `python -m autogemm bench` over the public suite.
# Logs go to $OUT: python-env.txt, python-build.log, pytest.log, pytest.xml,
# python-host-cost.json (the Python-vs-C++ host cost per call), python-bench.log.
#
#   scripts/gpu-python.sh [build] [tests] [bench]   (default: all three; tests and bench build
#                                                    first when nothing is built yet)
#   scripts/gpu-python.sh fetch     HERE, with network: pytest's wheels into .gpu-pywheels/, for
#                                   a GPU machine whose python has no pytest
# The device call carries the Debian build dependencies (and, if fetched, pytest):
#   carry [".gpu-deps", ".gpu-pywheels"]; command: bash scripts/gpu-python.sh
#
#   PYTHON=python3         the interpreter to build for and test with
#   PY_BUILD=pip|cmake     pip: `pip install --no-build-isolation --no-deps --target DIR .` with
#                          the interpreter's own pip (the packaging path; falls back to cmake
#                          when it fails); cmake: configure with -DAUTOGEMM_BUILD_PYTHON=ON and
#                          import from the build folder. Default pip.
#   PYTEST_ARGS="-k ..."   more pytest arguments
#   PY_CMAKE_ARGS="..."    more CMake arguments for PY_BUILD=cmake (e.g. -DAUTOGEMM_NCCL_ROOT=...)
#   BUILD_TIMEOUT=240 TEST_TIMEOUT=300 BENCH_TIMEOUT=90   seconds per step (a call has 600)
set -euo pipefail

if [[ "${1:-}" == fetch ]]; then
  cd "$(dirname "$0")/.."
  # Pure-Python wheels, with what pytest needs on a Python older than 3.11 too.
  python3 -m pip download --quiet --only-binary=:all: --dest .gpu-pywheels "pytest>=8,<10" \
    "exceptiongroup>=1"
  python3 -m pip download --quiet --only-binary=:all: --platform any --implementation py \
    --python-version 3.10 --no-deps --dest .gpu-pywheels "tomli>=1"
  ls .gpu-pywheels
  exit 0
fi

source "$(dirname "$0")/gpu-env.sh"   # repository root, $OUT, .gpu-deps, AUTOGEMM_CACHE_DIR
py="${PYTHON:-python3}"
py_path="$("$py" -c 'import sys; print(sys.executable)')"   # the interpreter, not a shim
mode="${PY_BUILD:-pip}"
target=/tmp/autogemm-py-site   # pip install --target: the built package
pip_build=build-gpu-py          # scikit-build-core's build folder (kept on a warm machine)
cmake_build=build-gpu-pycmake
export XLA_PYTHON_CLIENT_PREALLOCATE=false   # JAX would take 75% of the GPU at its first array
export AUTOGEMM_TEST_OUT="$OUT"
[[ -x build-gpu/src/cli/autogemm ]] && export AUTOGEMM_CLI="$PWD/build-gpu/src/cli/autogemm"

steps=("$@")
((${#steps[@]})) || steps=(build tests bench)

# What the machine has (read before anything can fail).
{
  date -u
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,power.limit --format=csv 2>&1 || true
  echo "python: $py_path"
  "$py" - <<'PY' 2>&1 || true
import importlib, sys
print(sys.version)
for name in ("torch", "cupy", "jax", "jaxlib", "numpy", "nanobind", "scikit_build_core",
             "pytest", "pip"):
    try:
        module = importlib.import_module(name)
        print(f"{name} {getattr(module, '__version__', '?')}")
    except Exception as e:  # noqa: BLE001
        print(f"{name} MISSING ({type(e).__name__}: {e})")
try:
    import torch
    print("torch CUDA", torch.version.cuda, "available", torch.cuda.is_available())
except Exception:
    pass
PY
} > "$OUT/python-env.txt"

# pytest: the system's, else the carried wheels installed into a folder of our own.
if ! "$py" -c "import pytest" 2>/dev/null; then
  if [[ -d .gpu-pywheels ]]; then
    "$py" -m pip install --quiet --upgrade --no-index --find-links .gpu-pywheels --target /tmp/autogemm-pytest \
      pytest >> "$OUT/python-env.txt" 2>&1
    export PYTHONPATH="/tmp/autogemm-pytest${PYTHONPATH:+:$PYTHONPATH}"
  else
    echo "no pytest for $py: run 'scripts/gpu-python.sh fetch' where there is network and carry .gpu-pywheels" \
      | tee -a "$OUT/python-env.txt"
  fi
fi

# A warm machine keeps the build folders, but synced sources can carry older mtimes than the
# objects (see gpu-run.sh): touch them when their content changed since the last build.
sources=(CMakeLists.txt cmake include src python pyproject.toml)
stamp=$(find "${sources[@]}" -type f -not -path '*/__pycache__/*' -print0 | sort -z | xargs -0 cat | sha1sum | cut -c1-40)
if [[ -f /tmp/autogemm-py.stamp && "$(cat /tmp/autogemm-py.stamp)" != "$stamp" ]]; then
  find "${sources[@]}" -type f -exec touch {} +
fi

runner=""   # the interpreter that imports the built package: always $py itself, so the tests
            # see exactly its torch, CuPy and JAX (a user site a venv would hide included)
use_target_package() {
  export PYTHONPATH="$target${PYTHONPATH:+:$PYTHONPATH}"
  runner="$py"
}
build_with_pip() {
  # The interpreter's own pip, installing into a folder of ours (--target): its python is
  # itself a virtual environment (/opt/torch/.venv), and a venv made from it would see the base
  # interpreter's packages, not its nanobind and scikit-build-core (the build backend then
  # fails to import). --no-build-isolation: nothing can be fetched there.
  rm -rf "$target"
  timeout "${BUILD_TIMEOUT:-240}" "$py" -m pip install --no-build-isolation --no-deps --no-index \
    -v --target "$target" -C "build-dir=$pip_build" . || return 1
  use_target_package
}
build_with_cmake() {
  timeout "${BUILD_TIMEOUT:-240}" bash -c "
    cmake -S . -B $cmake_build -G Ninja -DCMAKE_BUILD_TYPE=Release -DAUTOGEMM_BUILD_TESTS=OFF \
      -DAUTOGEMM_BUILD_CLI=OFF -DAUTOGEMM_BUILD_PYTHON=ON -DPython_EXECUTABLE='$py_path' ${PY_CMAKE_ARGS:-} &&
    cmake --build $cmake_build --target _core -j $(nproc)" || return 1
  export PYTHONPATH="$PWD/$cmake_build/python${PYTHONPATH:+:$PYTHONPATH}"
  runner="$py"
}
build() {
  local status=0
  {
    if [[ "$mode" == pip ]]; then
      build_with_pip || { echo "== pip install failed; building with CMake instead"; build_with_cmake; }
    else
      build_with_cmake
    fi
  } > "$OUT/python-build.log" 2>&1 || status=$?
  if ((status)) || [[ -z "$runner" ]]; then
    tail -40 "$OUT/python-build.log"
    echo "gpu-python.sh: the build failed (log: python-build.log)"
    exit 1
  fi
  echo "$stamp" > /tmp/autogemm-py.stamp
  (cd /tmp && "$runner" -c "import autogemm; print('built', autogemm.__version__, autogemm.__file__)") \
    | tee -a "$OUT/python-build.log"
}
ensure_built() {
  [[ -n "$runner" ]] && return 0
  if [[ "$mode" == pip && "$(cat /tmp/autogemm-py.stamp 2>/dev/null)" == "$stamp" ]] \
     && compgen -G "$target/autogemm/_core*.so" > /dev/null; then
    use_target_package
  else
    build
  fi
}

status=0
for step in "${steps[@]}"; do
  case "$step" in
    build) build ;;
    tests)
      ensure_built
      # -s shows the host-cost line; -rA lists every outcome with skip reasons.
      timeout "${TEST_TIMEOUT:-300}" "$runner" -m pytest tests/python -v -s -rA -p no:cacheprovider \
        --junitxml="$OUT/pytest.xml" ${PYTEST_ARGS:-} > "$OUT/pytest.log" 2>&1 || status=$?
      grep -E "host cost per call|^(FAILED|ERROR)|passed|failed" "$OUT/pytest.log" | tail -30 || true
      ((status == 5)) && echo "gpu-python.sh: pytest collected no tests"
      ((status == 124)) && echo "gpu-python.sh: pytest ran past ${TEST_TIMEOUT:-300} s"
      ;;
    bench)
      ensure_built
      timeout "${BENCH_TIMEOUT:-90}" "$runner" -m autogemm bench --suite bench/suites/gemm-public.csv \
        --iters 20 > "$OUT/python-bench.log" 2>&1 || status=$?
      tail -25 "$OUT/python-bench.log" || true
      ;;
    *) echo "unknown step $step (build, tests, bench, or fetch alone)"; exit 2 ;;
  esac
done
exit "$status"
