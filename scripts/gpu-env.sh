# Sourced by the scripts/gpu-*.sh that run on the GPU machine: the repository root as working
# directory, $OUT for the logs that come back, the Debian build dependencies carried there as
# .gpu-deps (../shared/docs/gpu-machine.md), the kernel cache, and the CLI gpu-run.sh builds.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-/tmp/autogemm-out}"
mkdir -p "$OUT"
# Unpacked once per machine, under a lock: an unpack rewrites the pkg-config files it extracts,
# and two at once (a script that builds beside another) rewrote their paths twice.
if [[ -d .gpu-deps ]]; then
  exec 9> /tmp/gpu-deps.lock
  flock 9
  [[ -s /tmp/gpu-deps.env ]] || bash .gpu-deps/gpu-deps unpack > /tmp/gpu-deps.env
  flock -u 9
  exec 9>&-
  source /tmp/gpu-deps.env
fi
export AUTOGEMM_CACHE_DIR="${AUTOGEMM_CACHE_DIR:-/tmp/autogemm-cache}"
bin=build-gpu/src/cli/autogemm

# NCCL for build-gpu: the toolkit's (cmake/nccl.cmake finds it); else the pip wheel's that the
# image's python3 has. Notes go to the log file given.
configure_nccl() {
  if [[ ! -f /usr/local/cuda/include/nccl.h ]]; then
    local nccl_root
    nccl_root=$(python3 -c 'import nvidia.nccl as n; print(list(n.__path__)[0])' 2>>"$1")
    if [[ -n "$nccl_root" ]]; then
      echo "NCCL from $nccl_root" >> "$1"
      cmake -S . -B build-gpu -G Ninja -DCMAKE_BUILD_TYPE=Release -DAUTOGEMM_NCCL_ROOT="$nccl_root" >> "$1" 2>&1
    fi
  fi
}
