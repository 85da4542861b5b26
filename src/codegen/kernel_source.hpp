#pragma once
// One kernel of a KernelSpec -> the CUDA source NVRTC compiles: a generated Config struct (the
// kernel's fields, N and K baked in, the wgmma wrapper) and an instantiation of the tile
// family's kernel template in src/kernels/sm90/gemm_kernel.cuh, or of the decode family's
// (decode_source.hpp). The spec was checked by the rules
// (plan/rules.hpp) when it was made, so nothing here decides or refuses anything.
#include "autogemm/kernel_spec.hpp"
#include "jit/jit.hpp"

namespace autogemm::codegen {

// The epilogue's output element as both families' Config spells it (out_kind): 0 bf16,
// 1 fp16, 2 fp32.
int out_kind(DType t);

// `traced`: compiled with the tile trace's per-tile timing (AUTOGEMM_TRACE_TILES, src/trace/).
jit::KernelSource gemm_kernel_source(const KernelLaunch& kernel, bool traced);

}  // namespace autogemm::codegen
