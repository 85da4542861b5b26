#pragma once
// The rules a GemmConfig must satisfy for the sm_90a kernel family, split in two halves so the
// search can check each tile shape once and each schedule (cluster, raster, persistence) apart:
//   tile_violation:     instruction, paths, tile sizes, shared memory, registers, wgmma, TMA
//   schedule_violation: clusters and multicast
// legality_violation (plan.hpp) = tile_violation, then schedule_violation.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "plan/tma_rules.hpp"

namespace autogemm::plan {

// One pipeline stage holds 128 bytes of K per row: exactly one 128B-swizzle atom, the widest
// inner box TMA allows with 128B swizzle and the K span the wgmma descriptor walks in 4 steps
// (hopper-facts.md 1.4, 3.1). 64 for 2-byte inputs, 128 for FP8.
int block_k_for(DType input);

// Registers each consumer thread may use (setmaxnreg, hopper-facts.md 5): 240 for one
// consumer warpgroup beside the producer, 232 for two (CUTLASS/DeepGEMM values, 384 threads x
// 168 at launch); 255 (the per-thread maximum) without warp specialisation.
int consumer_register_budget(const GemmConfig& config);
// Registers the kernel keeps free beside the accumulators: fragment addresses, descriptors,
// loop state, epilogue conversion.
inline constexpr int kRegisterHeadroom = 64;
// With two FP8 promotion temporaries (promotion_buffers = 2) the fragments take three quarters
// of the budget; ptxas fits 192 of them in 232 registers without spilling but not 216 (in 232
// or 240), so this path keeps 40 free (measured with NVRTC, CUDA 13.0; tests/
// test_kernel_compile.cpp Fp8OverlappedPromotion*).
inline constexpr int kOverlappedPromotionHeadroom = 40;
// ... plus this many per m64 slab beyond the first of a consumer: a second slab's scales and
// fragment addresses. 256x64 pb2 (two slabs, 192 fragment registers) spilled 12-32 B in ptxas
// once the block scales came through shared memory.
inline constexpr int kOverlappedPromotionHeadroomPerExtraSlab = 8;
// Ordered issue with one temporary (slab waves) holds the accumulators and one slab-sized
// temporary, 192 registers at 128x192 or 256x128: the same 40 free as the overlapped
// promotion (checked with NVRTC, tests/test_kernel_compile.cpp OrderedIssue*).
// FP32 accumulator registers per consumer thread: each m64nN wgmma accumulator is N/2
// registers per thread (hopper-facts.md 2.3) and a consumer owns block_m/num_consumers/64
// such m64 slabs.
int accumulator_registers(const GemmConfig& config);

// The TMA descriptions the kernel will encode for a configuration (A and B loads when
// load_path = tma; D, and C when the problem reads it, when store_path = tma), with the
// global shapes and strides of the problem. Address 0: alignment is checked at run time.
struct NamedTmaBox {
  std::string operand;  // "A", "B", "C", "D"
  TmaDescription description;
};
std::vector<NamedTmaBox> gemm_tma_boxes(const GemmProblem& problem, const GemmConfig& config);

// Device name for messages: the preset key when there is one, else the product name.
std::string device_label(const GpuInfo& device);
// "sm_90a", from the capability row when known, else from the compute capability.
std::string arch_label(const GpuInfo& device);

std::string tile_violation(const GemmProblem& problem, const GemmConfig& config,
                           const GpuInfo& device);
std::string schedule_violation(const GemmProblem& problem, const GemmConfig& config,
                               const GpuInfo& device);

// The largest num_stages in [2, max_stages] whose shared memory fits the device's opt-in
// limit, or 0 when not even 2 fit.
int max_stages_that_fit(const GemmProblem& problem, GemmConfig config, const GpuInfo& device,
                        int max_stages);

}  // namespace autogemm::plan
