# Sourced by the scripts/gpu-*.sh that run on the GPU machine: the repository root as working
# directory, $OUT for the logs that come back, the Debian build dependencies carried there as
# .gpu-deps (../shared/docs/gpu-machine.md), the kernel cache, and the CLI gpu-run.sh builds.
cd "$(dirname "${BASH_SOURCE[0]}")/.."
OUT="${OUT:-/tmp/autogemm-out}"
mkdir -p "$OUT"
if [[ -d .gpu-deps ]]; then eval "$(bash .gpu-deps/gpu-deps unpack)"; fi
export AUTOGEMM_CACHE_DIR="${AUTOGEMM_CACHE_DIR:-/tmp/autogemm-cache}"
bin=build-gpu/src/cli/autogemm
