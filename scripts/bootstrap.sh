#!/usr/bin/env bash
# Installs what is missing (Debian packages through apt-get), then configures and builds
# autogemm into ./build. Used by scripts/main.sh and scripts/test.sh; safe to run repeatedly.
#   AUTOGEMM_NO_APT=1       never call apt-get (e.g. a machine without a package registry)
#   AUTOGEMM_BUILD_DIR=dir  build somewhere else (default: build)
#   CUDAToolkit_ROOT=dir    CUDA toolkit (default: /usr/local/cuda)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(cmake ninja-build g++ pkg-config libcpuinfo-dev libcli11-dev libfmt-dev
          nlohmann-json3-dev libgtest-dev libgmock-dev libxxhash-dev)
# scripts/test.sh builds the Python package in a virtual environment: python3 with venv and
# its headers (Debian's python3 lacks both until python3-venv and python3-dev are installed).
if ! python3 -c 'import ensurepip, os, sysconfig, sys
sys.exit(not os.path.isfile(os.path.join(sysconfig.get_paths()["include"], "Python.h")))' \
    2>/dev/null; then
  packages+=(python3 python3-venv python3-dev)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  if [[ "${AUTOGEMM_NO_APT:-0}" != 1 ]] && command -v apt-get >/dev/null; then
    sudo=""
    [[ "$(id -u)" != 0 ]] && sudo="sudo"
    echo "bootstrap: installing ${missing[*]}"
    $sudo apt-get update -qq
    DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  else
    echo "bootstrap: not installing ${missing[*]} (AUTOGEMM_NO_APT=1 or no apt-get); CMake will say what it cannot find"
  fi
fi

export CUDAToolkit_ROOT="${CUDAToolkit_ROOT:-/usr/local/cuda}"
if [[ ! -x "$CUDAToolkit_ROOT/bin/nvcc" && ! -f "$CUDAToolkit_ROOT/include/cuda.h" ]]; then
  echo "bootstrap: no CUDA toolkit at $CUDAToolkit_ROOT (set CUDAToolkit_ROOT); autogemm needs 12.4 or newer" >&2
  exit 1
fi
build="${AUTOGEMM_BUILD_DIR:-build}"
generator=()
command -v ninja >/dev/null && generator=(-G Ninja)
cmake -S . -B "$build" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j "$(nproc)"
