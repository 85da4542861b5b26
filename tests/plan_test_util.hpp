#pragma once
// Hand-built device descriptions for planner tests, so expected numbers are exact.
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::testing {

// A Hopper: 132 SMs (or `sm_count`), 227 KB opt-in shared memory, 50 MiB L2, 3352 GB/s, 1.98 GHz.
inline GpuInfo hopper(int sm_count = 132) {
  GpuInfo g;
  g.name = "test hopper";
  g.cc = {9, 0};
  g.caps = *arch_capabilities(g.cc);
  g.sm_count = sm_count;
  g.smem_per_block_optin_bytes = 232448;
  g.l2_bytes = 50 << 20;
  g.memory_bandwidth_gbps = 3352;
  g.sm_clock_khz = 1980000;
  return g;
}

// A bf16 problem M x N x K (packed leading dimensions) in `layout`.
inline GemmProblem problem(int64_t m, int64_t n, int64_t k, Layout layout = Layout::nt) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  p.layout = layout;
  return p;
}

// The same M x N x K in block-scaled FP8: e4m3 inputs, 1x128 / 128x128 scales, bf16 output.
inline GemmProblem block_fp8_problem(int64_t m, int64_t n, int64_t k) {
  GemmProblem p = problem(m, n, k);
  p.a_type = p.b_type = DType::e4m3;
  p.d_type = DType::bf16;
  p.scaling = Scaling::block_1x128_128x128;
  return p;
}

}  // namespace autogemm::testing
