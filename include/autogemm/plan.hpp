#pragma once
// Planning: problem + device -> ranked configurations, and the kernel-selection table. Pure
// host code; never touches a GPU, so it runs for any preset on any machine.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

struct Candidate {
  GemmConfig config;
  Prediction prediction;
};

struct RejectedConfig {
  GemmConfig config;
  std::string reason;   // names the rule: "smem 245760 B > 232448 B opt-in limit per block"
};

struct Plan {
  GemmProblem problem;
  GpuInfo device;
  std::vector<Candidate> candidates;   // legal, the planner's choice first, then in its order
                                       // (predicted times within 2% tie: plan --top says how
                                       // ties break); never empty
  std::vector<RejectedConfig> rejected;
  std::string path_reason;             // why this instruction/implementation ("sm_90a: TMA+wgmma")
  KernelSpec spec;                     // what a call launches for the best candidate
  const Candidate& best() const { return candidates.front(); }
};

// validate(problem) first; throws InvalidArgument on bad input. When the device has no kernel
// of ours for the problem, the single candidate has instruction = vendor and path_reason says why.
Plan plan_gemm(const GemmProblem& problem, const GpuInfo& device);

// The cost model alone (used by plan_gemm, tests and the bench's predicted-vs-measured column).
Prediction predict(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device);

// Empty when the configuration is legal for the problem on the device, else the first rule it
// breaks (shared memory, registers, wgmma/TMA shapes, clusters and multicast), or the first of
// the planner's preferences it misses (a cluster dividing the tile count).
std::string legality_violation(const GemmProblem& problem, const GemmConfig& config,
                               const GpuInfo& device);

// Shared memory the sm_90a kernel needs for a configuration (stages, epilogue staging,
// scales, barriers, alignment padding), from the carve-up the kernel itself uses.
int gemm_smem_bytes(const GemmProblem& problem, const GemmConfig& config);

enum class KernelClass { gemm, gemv, quantized_gemm, quantized_dot, attention, rmsnorm,
                         softmax, rope, silu, elementwise };
std::string_view to_string(KernelClass c);

struct KernelChoice {
  KernelClass kernel_class;
  std::string implementation;  // "autogemm sm90a", "cuBLASLt", "none yet", "CPU"
  std::string path;            // "TMA+wgmma", "wgmma", "TMA", "standard", "tcgen05", "vendor"
  std::string reason;          // one line
};

std::vector<KernelChoice> select_kernels(const GpuInfo& device);

}  // namespace autogemm
