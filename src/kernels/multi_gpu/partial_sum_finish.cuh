#pragma once
// Split K over several GPUs (src/multi/nccl_exec.cpp): NCCL has summed the GPUs' fp32 partial
// products; this applies alpha, beta and C and rounds once to D's type, as the GEMM's epilogue
// would on one GPU (alpha * acc + beta * C in fp32, then one round to nearest even).
#include "multi_gpu/partial_sum_finish_params.cuh"
#include "ptx/convert.cuh"

namespace autogemm::multi_gpu {

__device__ __forceinline__ float load_out(const void* base, long long index, int type) {
  if (type == kPartialOutBf16) return ptx::bf16_to_float(static_cast<const unsigned short*>(base)[index]);
  if (type == kPartialOutFp16) return ptx::f16_to_float(static_cast<const unsigned short*>(base)[index]);
  return static_cast<const float*>(base)[index];
}

__device__ __forceinline__ void store_out(void* base, long long index, int type, float v) {
  if (type == kPartialOutBf16)
    static_cast<unsigned short*>(base)[index] = ptx::float_to_bf16(v);
  else if (type == kPartialOutFp16)
    static_cast<unsigned short*>(base)[index] = ptx::float_to_f16(v);
  else
    static_cast<float*>(base)[index] = v;
}

}  // namespace autogemm::multi_gpu

// grid = (ceil(cols / 256), min(rows, 65535)), block = 256 threads; rows are grid-strided.
extern "C" __global__ void __launch_bounds__(256)
autogemm_partial_sum_finish(const PartialSumFinishParams p) {
  using namespace autogemm::multi_gpu;
  const long long col = (long long)blockIdx.x * blockDim.x + threadIdx.x;
  if (col >= p.cols) return;
  for (long long row = blockIdx.y; row < p.rows; row += gridDim.y) {
    float v = p.alpha * p.partial[row * p.ld_partial + col];
    if (p.beta != 0.0f) v += p.beta * load_out(p.c, row * p.ldc + col, p.out_type);
    store_out(p.d, row * p.ldd + col, p.out_type, v);
  }
}
