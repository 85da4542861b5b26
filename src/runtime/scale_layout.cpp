#include "runtime/scale_layout.hpp"

#include <fmt/format.h>

#include "kernels/sm90/fp8_scales.cuh"
#include "kernels/sm90/scale_transpose_params.cuh"
#include "cuda/cuda_check.hpp"
#include "runtime/simple_launch.hpp"

namespace autogemm::runtime {

namespace {

int64_t a_scale_k_blocks(const GemmProblem& p) {
  return (p.k + sm90::kScaleBlock - 1) / sm90::kScaleBlock;
}

}  // namespace

AScaleStrides natural_a_scale_strides(const GemmProblem& p) {
  return {a_scale_k_blocks(p), 1};
}

float* transpose_a_scales(const GemmProblem& p, const float* scale_a, cudaStream_t stream,
                          AScaleStrides& strides) {
  ScaleTransposeParams params{};
  params.src = scale_a;
  params.m = p.m;
  params.k_blocks = a_scale_k_blocks(p);
  params.dst_ld = scale_transpose_ld(p.m);
  float* dst = nullptr;
  cuda_check(cudaMallocAsync(reinterpret_cast<void**>(&dst),
                             size_t(params.k_blocks) * size_t(params.dst_ld) * sizeof(float), stream),
             "cudaMallocAsync(transposed A scales)");
  params.dst = dst;
  SimpleGrid grid;
  grid.block_x = 32;
  grid.block_y = 8;
  grid.grid_x = static_cast<unsigned>((params.dst_ld + 31) / 32);
  grid.grid_y = static_cast<unsigned>((params.k_blocks + 31) / 32);
  launch_simple_kernel("sm90/scale_transpose.cuh", "autogemm_scale_a_transpose", grid, &params,
                       stream, fmt::format("A-scale transposition {} x {}", p.m, params.k_blocks));
  strides = {1, params.dst_ld};
  return dst;
}

}  // namespace autogemm::runtime
