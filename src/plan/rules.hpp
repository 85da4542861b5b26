#pragma once
// Every rule of the sm_90a kernel family, written once. Each returns empty or the reason: the
// field, its value and the rule it breaks. The planner filters its candidates with them,
// make_kernel_spec refuses a forced configuration with them, and the device code's
// static_asserts (src/kernels/sm90) are only a backstop: a configuration these rules accept
// compiles (tests/test_config_rules.cpp compiles one on each side of every limit).
//   tile_violation:        instruction, paths, tile sizes, shared memory, registers, FP8,
//                          wgmma, TMA boxes
//   schedule_violation:    raster order, clusters and multicast, split-K, stream-K, the n-tail
//                          kernel
//   kernel_violation:      both, and for the n-tail kernel each of its two kernels
//   preference_violation:  the planner's own preferences, which a forced configuration need
//                          not meet (the kernel is correct without them)
// legality_violation (plan.hpp) = kernel_violation, then preference_violation.
// The decode family (instruction = mma) has its own rules (decode_rules.cpp): tile_violation
// hands its configurations to decode_violation.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/gemm.hpp"
#include "autogemm/kernel_spec.hpp"
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
int consumer_register_budget(const KernelFields& fields);
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

// C is D in fp32 (weight gradients: dW += dY^T X), read back from DRAM after every k-loop.
bool accumulates_fp32_from_dram(const GemmProblem& problem);

// The TMA descriptions the kernel will encode for a configuration (A and B loads when
// load_path = tma; D, and C when the problem reads it, when store_path = tma), with the
// global shapes and strides of the problem. Address 0: alignment is checked at run time.
struct NamedTmaBox {
  std::string operand;  // "A", "B", "C", "D"
  TmaDescription description;
  bool tail = false;    // C and D: the tile's tail slab (kernels/sm90/gemm_layout.cuh)
};
std::vector<NamedTmaBox> gemm_tma_boxes(const GemmProblem& problem, const KernelFields& fields);

// Empty when A, B, C (when the problem reads it) and D, at their leading dimensions, fit in
// the device's memory, else the bytes they need and the bytes the device has. Sizes each
// below 2^31 can still need exabytes; such a problem can never run, so planning refuses it
// rather than planning and compiling it. The capacity is memory_total_bytes: a preset's
// published size, or what cudaMemGetInfo reported for a present GPU. Not its free memory:
// in a gemm() call the operands are already allocated, so free memory no longer counts them.
// A device whose memory is unknown (0) is not checked.
std::string memory_violation(const GemmProblem& problem, const GpuInfo& device);
// Throws InvalidArgument("problem", "<m> x <n> x <k>", memory_violation) when it is not
// empty, or naming the leading dimension ("lda", its value) when packed rows of that operand
// would fit. Called by plan_gemm and make_spec, so planned and forced configurations alike.
void check_memory(const GemmProblem& problem, const GpuInfo& device);

// Device name for messages: the preset key when there is one, else the product name.
std::string device_label(const GpuInfo& device);
// "sm_90a", from the capability row when known, else from the compute capability.
std::string arch_label(const GpuInfo& device);

// split_k's limit: the last split of a tile polls the others' ready flags with one lane each
// (kernels/sm90/split_k_reduce.cuh), so at most a warp's 32 splits.
inline constexpr int kMaxSplitK = 32;

// The kernel fields of `config` for `problem`: the ladder's switches, D staged and stored by
// the threads where TMA cannot store its rows (d_needs_thread_stores: TMA stores clip at 16
// bytes, not per element, and need 16-byte row strides); swap_ab: D^T staged as the caller's rows
// for TMA (tma_stores_d_transposed), else stored from registers.
KernelFields kernel_fields(const GemmProblem& problem, const GemmConfig& config,
                           const LadderSwitches& switches = {});

std::string tile_violation(const GemmProblem& problem, const KernelFields& fields,
                           const GpuInfo& device);
// The consumers' accumulators (and FP8 promotion temporaries) against their register budget
// (part of tile_violation).
std::string register_violation(const GemmProblem& problem, const KernelFields& fields);
// D staged in chunks (GemmConfig::d_chunk_boxes; part of tile_violation): which tiles the
// epilogue's chunked store is built for.
std::string d_chunk_violation(const GemmProblem& problem, const KernelFields& fields);
// The decode family: each lane keeps two steps' loads in registers (the next one in flight), 4
// per 16-byte vector: two rows of B and block_m / 8 rows of A per 64-byte chunk of K. 16
// vectors a step (128 registers for two) leave room for the accumulators and addresses under
// 255 registers.
inline constexpr int kDecodeMaxStepVectors = 16;
// Weight-only B: B's rows (two a row tile) for num_stages + 1 steps (num_stages in flight) and
// A's vectors of one step (4 per B vector at int4, 2 at int8) are what a lane holds; 24 (96
// registers, beside a chunk's 32 dequantised pairs) keeps every tile at 3 or more CTAs an SM
// with one row tile (ptxas: 122 registers at int4 8x16x256, 154 at 32x64x128).
inline constexpr int kWeightMaxStepVectors = 24;
// ... and with two row tiles, where ptxas (NVRTC, CUDA 13.0) compiled every configuration of
// block_m 8-32, block_n 32-64, block_k 128-256, 1-3 steps ahead and split-K 1-8 without
// spills at K = 4096: 24 vectors (int4, int8), 16 (mxfp4: its two bf16 multiplies a pair), 4
// fewer with split-K. Past them a tile keeps one row tile (int4 32x64x128 s2 spilled 16-44
// bytes). MXFP4's second tile is counted at 16 registers (plan/decode_cost.cpp): at 8, 8x64x128
// s2 ran 3 CTAs an SM and spilled 4 bytes at K = 768, 1536 and 7168.
inline constexpr int kWeightTwoTileMaxVectors = 24;
inline constexpr int kWeightTwoTileMaxVectorsMxfp4 = 16;
inline constexpr int kWeightTwoTileSplitVectors = 4;
// Weight-only: steps of B in flight in registers (num_stages), at most.
inline constexpr int kWeightMaxStepsAhead = 4;
// Weight-only B: each warp multiplies two 16-row tiles of B against every A fragment it loads
// where the CTA has 32 rows or more. A's bytes through L1 per B byte halve (2 per 8-row group
// at int4 with one tile), and L1 was the limit past 8 rows (Nsight Compute, H200: L1/TEX 75-78%
// busy at 16 and 32 x 14336 x 4096): with configs this rule gives two tiles, int4 32 x 14336 x
// 4096 32x64x128 s1 51.8 -> 33.6 us, 16 x 14336 x 4096 16x64x128 s2 sk3 32.0 -> 27.4 (same
// configs, H200). Otherwise, or where two tiles' vectors pass kWeightTwoTileMaxVectors, one tile.
int decode_row_tiles(const GemmProblem& problem, const GemmConfig& config);
// The vectors a lane holds for a step (the rules' register measure), and the limit for the
// problem.
int decode_step_vectors(const GemmProblem& problem, const GemmConfig& config);
int decode_max_step_vectors(const GemmProblem& problem);
// B's bits per element (4 or 8 for weight-only formats), the K elements of a 64-byte chunk of
// B's row, and A's 16-byte vectors per lane over the same K (sm90/decode_kernel.cuh kSpan,
// kAVectors).
int decode_b_bits(const GemmProblem& problem);
int decode_chunk_elements(const GemmProblem& problem);
int decode_a_vectors(const GemmProblem& problem);
// With num_stages >= 2 each warp copies its steps into a cp.async ring of its own instead:
// the rings' dynamic shared memory per CTA (0 with registers). The kernel's static shared
// memory (the K warps' and splits' sums) stays under kDecodeStaticSmemBytes.
inline constexpr int kDecodeMaxStages = 8;
inline constexpr int kDecodeStaticSmemBytes = 8 * 1024;
int decode_ring_bytes(const GemmProblem& problem, const GemmConfig& config);
// Whether the rings and the static shared memory fit a CTA on the device (the rule
// decode_violation applies, and the one the search enumerates rings by).
bool decode_ring_fits(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device);
std::string decode_violation(const GemmProblem& problem, const KernelFields& fields,
                             const GpuInfo& device);
std::string schedule_violation(const GemmProblem& problem, const KernelFields& fields,
                               const GpuInfo& device);
// Stream-K (GemmConfig::stream_k): part of schedule_violation.
std::string stream_k_violation(const GemmProblem& problem, const KernelFields& fields,
                               const GpuInfo& device);
// Grouped problems (grouped.hpp): the tile family, tiles inside one group (block_m 64 or 128
// dividing the group step), no clusters along M, no split-K or n-tail kernel.
std::string grouped_violation(const GemmProblem& problem, const KernelFields& fields);
// Row-band signals (GemmProblem::signal_bands): what the kernel's band walk and counting need.
std::string signal_violation(const GemmProblem& problem, const KernelFields& fields);
// The rows every signalled band must be a multiple of: whole cluster tiles (block_m x
// cluster_m), since the scheduler walks the bands in cluster rows and counts whole tiles.
int64_t signal_band_rows(const GemmConfig& config);
std::string kernel_violation(const GemmProblem& problem, const KernelFields& fields,
                             const GpuInfo& device);
std::string preference_violation(const GemmProblem& problem, const GemmConfig& config,
                                 const GpuInfo& device);

// Empty when every operand pointer of a call with `spec` keeps the TMA address rule (16-byte
// aligned A, B, D, and C when read), else the first that does not. The call's entry point
// checks it (runtime/gemm.cpp); the vendor path takes any pointer.
std::string operand_violation(const KernelSpec& spec, const GemmOperands& operands);

// The scaling the kernel compiles for (kernels/sm90/fp8_scales.cuh kScaling*, the generated
// Config's `scaling`): kScalingNone for 16-bit inputs.
int kernel_scaling(const GemmProblem& problem);

// Shared memory the kernel needs (gemm_layout.cuh, the carve-up the kernel itself uses).
int gemm_smem_bytes(const GemmProblem& problem, const KernelFields& fields);

// The largest num_stages in [2, max_stages] whose shared memory fits the device's opt-in
// limit, or 0 when not even 2 fit.
int max_stages_that_fit(const GemmProblem& problem, KernelFields fields, const GpuInfo& device,
                        int max_stages);

}  // namespace autogemm::plan
