#pragma once
// Compiles (through the JIT caches), loads and launches the sm90 GEMM kernel for one
// configuration. Everything that does not depend on the call's pointers or M is prepared once
// per (device, kernel) and kept.
#include <cuda_runtime_api.h>

#include "autogemm/config.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::runtime {

struct LaunchShape {
  int grid_ctas = 0;       // CTAs launched (a multiple of the cluster size)
  int threads = 0;         // per CTA
  int smem_bytes = 0;      // dynamic shared memory per CTA
  int cluster_size = 1;
};

// Compiles and loads the kernel if needed (no launch). Returns the time it took in ms (0 when
// cached). Used by `autogemm warmup` and to keep compile time out of measurements.
double prepare_gemm_kernel(const GemmProblem& problem, const GemmConfig& config);

// Launches our kernel on `stream`; the caller validated problem, operands and configuration.
LaunchShape launch_gemm(const GemmProblem& problem, const GemmConfig& config,
                        const GemmOperands& operands, cudaStream_t stream);

}  // namespace autogemm::runtime
