#pragma once
// Compile once, launch often: the library's small helper kernels (the reference GEMM, FP8
// quantisation) are embedded device headers with one extern "C" kernel taking one parameter
// struct. NVRTC compiles them for the current device (jit::get_or_compile caches them in memory
// and on disk), runtime::load_kernel loads them once per device, and they launch without
// clusters or dynamic shared memory.
#include <cuda_runtime_api.h>

#include <string>

namespace autogemm::runtime {

// The current device's compute capability as major * 10 + minor (90 for an H100).
int current_device_cc();

// "sm_90": the current device's real architecture, without the "a" suffix (these kernels use
// nothing architecture-specific, so they run on whatever GPU NVRTC can target).
std::string current_device_arch();

struct SimpleGrid {
  unsigned grid_x = 1, grid_y = 1, grid_z = 1;
  unsigned block_x = 1, block_y = 1, block_z = 1;
};

// Compiles (cached) the embedded header `header` ("quant/dequantize.cuh") for the current
// device and launches its extern "C" kernel `kernel_name` with `*params` as the only argument.
// Errors name `what` ("dequantize_fp8 300 x 257").
void launch_simple_kernel(const std::string& header, const std::string& kernel_name,
                          const SimpleGrid& grid, void* params, cudaStream_t stream,
                          const std::string& what);

}  // namespace autogemm::runtime
