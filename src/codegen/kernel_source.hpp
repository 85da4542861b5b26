#pragma once
// GemmProblem + GemmConfig -> the CUDA source NVRTC compiles: a generated Config struct (the
// configuration fields, N and K baked in, the wgmma wrapper) and an instantiation of the one
// kernel template in src/kernels/sm90/gemm_kernel.cuh.
#include "autogemm/config.hpp"
#include "autogemm/problem.hpp"
#include "jit/jit.hpp"

#include <utility>
#include <vector>

namespace autogemm::runtime {

// Throws InvalidArgument when the configuration is one the kernel template cannot take (the
// planner never proposes those; forced configurations are checked here).
jit::KernelSource gemm_kernel_source(const GemmProblem& problem, const GemmConfig& config);

// The kernels one call with this configuration launches, each with its own problem and
// configuration: one, or the main and the n-tail kernel (plan/n_tail.hpp).
std::vector<std::pair<GemmProblem, GemmConfig>> gemm_kernels(const GemmProblem& problem,
                                                            const GemmConfig& config);

// Throws InvalidArgument naming the field when the kernel template cannot take the
// configuration for the problem (what gemm_kernel_source checks first, without generating it).
void check_kernel_config(const GemmProblem& problem, const GemmConfig& config);

// Threads per CTA of the configuration (128 per consumer warpgroup, +128 for the producer).
int gemm_threads_per_cta(const GemmConfig& config);

}  // namespace autogemm::runtime
