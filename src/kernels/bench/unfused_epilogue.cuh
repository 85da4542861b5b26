#pragma once
// The fused epilogue's arithmetic (sm90/fused_epilogue.cuh) as a kernel of its own over D: the
// baseline `bench --epilogue` times our fused GEMM against (a plain GEMM, then this). Two
// elements a thread, as the GEMM's fragment pairs, so its loads and activations are the same.
#include "bench/unfused_epilogue_params.cuh"
#include "sm90/fused_epilogue.cuh"

namespace autogemm::bench_kernels {

__device__ __forceinline__ float load_d(const void* d, long long i, int kind) {
  if (kind == 0) return ptx::bf16_to_float(static_cast<const unsigned short*>(d)[i]);
  if (kind == 1) return ptx::f16_to_float(static_cast<const unsigned short*>(d)[i]);
  return static_cast<const float*>(d)[i];
}

__device__ __forceinline__ void store_d(void* d, long long i, int kind, float v) {
  if (kind == 0) static_cast<unsigned short*>(d)[i] = ptx::float_to_bf16(v);
  else if (kind == 1) static_cast<unsigned short*>(d)[i] = ptx::float_to_f16(v);
  else static_cast<float*>(d)[i] = v;
}

// The GEMM's form for D's type (fused_epilogue.cuh kFastActivation): one MUFU instruction
// unless D is fp32 (d_kind 2).
template <bool Fast>
__device__ __forceinline__ float activate_as(int activation, float x) {
  using autogemm::sm90::activate;
  switch (activation) {
    case 1: return activate<1, Fast>(x);
    case 2: return activate<2, Fast>(x);
    case 3: return activate<3, Fast>(x);
    case 4: return activate<4, Fast>(x);
    default: return x;
  }
}

__device__ __forceinline__ float activate_kind(int activation, int d_kind, float x) {
  return d_kind != 2 ? activate_as<true>(activation, x) : activate_as<false>(activation, x);
}

}  // namespace autogemm::bench_kernels

// grid = (ceil(cols / 512), min(rows, 65535)), block = 256 threads, two columns each; rows are
// grid-strided.
extern "C" __global__ void __launch_bounds__(256)
autogemm_unfused_epilogue(const UnfusedEpilogueParams p) {
  using namespace autogemm::bench_kernels;
  using autogemm::sm90::load_vector_element;
  const long long col0 = ((long long)blockIdx.x * blockDim.x + threadIdx.x) * 2;
  for (long long row = blockIdx.y; row < p.rows; row += gridDim.y) {
    const float rs = p.row_scale != nullptr ? p.row_scale[row] : 1.0f;
#pragma unroll
    for (int e = 0; e < 2; ++e) {
      const long long col = col0 + e;
      if (col >= p.cols) break;
      const long long i = row * p.ldd + col;
      float v = load_d(p.d, i, p.d_kind) * rs;
      if (p.col_scale != nullptr) v *= p.col_scale[col];
      if (p.bias != nullptr)
        v += p.bias_kind == 1 ? load_vector_element<1>(p.bias, col)
                              : load_vector_element<2>(p.bias, col);
      store_d(p.d, i, p.d_kind, activate_kind(p.activation, p.d_kind, v));
    }
  }
}
