#pragma once
// One kernel of the decode family (config.instruction = mma) -> the CUDA source NVRTC
// compiles: a generated Config struct and an instantiation of sm90/decode_kernel.cuh.
// gemm_kernel_source (kernel_source.hpp) hands these kernels here.
#include "autogemm/kernel_spec.hpp"
#include "jit/jit.hpp"

namespace autogemm::codegen {

jit::KernelSource decode_kernel_source(const KernelLaunch& kernel);

}  // namespace autogemm::codegen
