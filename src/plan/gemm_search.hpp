#pragma once
// The configuration search behind plan_gemm: which implementation a problem gets on a device,
// and the configurations considered for our own kernel.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// Why the problem goes to the vendor library (cuBLASLt) on this device, naming the rule:
// "a100-80g is sm_80: no wgmma/TMA (sm_90a); cuBLASLt". Empty when our sm_90a kernel applies.
std::string vendor_reason(const GemmProblem& problem, const GpuInfo& device);

// split_k values worth considering for a tile: 1, plus 2..8 where the output tiles leave SMs
// idle and every split keeps enough k-blocks to pipeline.
std::vector<int> split_k_choices(const GemmProblem& problem, int block_m, int block_n, int block_k,
                                 const GpuInfo& device);

// promotion_buffers values to consider: {1, 2} for FP8 (the register rule then rejects what
// does not fit), {1} for 16-bit inputs.
std::vector<int> promotion_buffer_choices(const GemmProblem& problem);

// ordered_issue values to consider: {false, true} for FP8 with two consumers of two m64 slabs
// each, one promotion temporary and a B scale split that is the same in every tile; {false}
// otherwise.
std::vector<bool> ordered_issue_choices(const GemmProblem& problem, int block_m, int block_n,
                                        int num_consumers, int promotion_buffers);

// pingpong values to consider: {false, true} for 16-bit inputs with two consumers, unswapped,
// dense or grouped along K, where the epilogue accumulates fp32 from DRAM (weight gradients)
// or is fused (not FP8 output) on more than 256 rows; {false} otherwise.
std::vector<bool> pingpong_choices(const GemmProblem& problem, int num_consumers, bool swap_ab);

// tail_split values to consider for a configuration (its tile, cluster and split-K set):
// {1}, plus the split plan_tail_split gives the last wave (at most kMaxTailSplit) where the
// tiles leave a partial last wave on a persistent grid.
inline constexpr int kMaxTailSplit = 16;
// Whether plan_gemm offers tail splits. Off: they pass the GPU tests, but a kernel compiled
// with a tail split runs its whole tiles 4.5-8.5% slower than the same tiles without it (even
// where nothing is split), which eats the tail's gain (4096 x 2112 x 7168: 118.3 -> 117.0 us
// where the cost model predicts 133 -> 115, on the H100). A configuration
// given with "tsN" runs either way.
inline constexpr bool kPlanTailSplits = false;
std::vector<int> tail_split_choices(const GemmProblem& problem, const GemmConfig& config,
                                    const GpuInfo& device);

// Whether the planner tries stream-K (GemmConfig::stream_k) for `config` (a tile with its schedule)
// on the kernel problem `problem`: the weight-bound middle's swapped 16-bit one-consumer tiles
// holding all of the call's rows in one tile column, more tiles than SMs with a partial last wave,
// and K of at least kStreamKMinKBlocks k-blocks (what it needs to run at all is
// stream_k_violation's, which the search also asks). There a partial wave's lone SMs each stream
// their tile's B at one SM's rate, so it costs a whole tile's time; stream-K shares it out.
// Measured on an H200 (forced, same tile with and without stk): 130 x 18432 x 7168 113.8 -> 93.8
// us, 138 x 57344 x 8192 304.0 -> 272.4, 147 x 53248 x 16384 558.6 -> 472.8. Elsewhere its runs'
// k-blocks, each CTA at its own k, ran 16-70% slower than a wave's (tile traces: 735 against 631
// cycles a k-block, FP8 128x128 800-1050 against 606), and it lost: 142 x 10240 x 8192 (80 tiles,
// one wave) 60.7 -> 70.3 us, 142 x 24576 x 1536 41.6 -> 50.7, two consumers' 225 x 57344 x 8192
// (128x232 against 128x224 cl2x1/b) 367.3 -> 383.1, FP8 1153 x 7168 x 2048 39.3 -> 48.3, 128 x 2112
// x 7168 against split-K 15.8 -> 16.9. The rules still judge it.
inline constexpr int64_t kStreamKMinKBlocks = 64;
bool stream_k_offered(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device);

// Whether the planner tries multicast clusters for the kernel problem `problem` (swapped
// already where swap_ab): not for swapped operands, not at decode sizes (M <= 128), not for
// block-scaled FP8 with more than 11 k-blocks; each measured slower than the same tiles alone.
// An explicit "clMxN/{a,b}" configuration runs either way.
bool multicast_offered(const GemmProblem& problem, bool swap_ab);

// The decode family's configurations (instruction = mma) the planner predicts for `problem`:
// rows of A per CTA (8, 16, 32; wider only where M needs it), rows of B per CTA (16, 32, 64),
// every block_k whose step fits the register rule, split_k up to one step per split. Only for
// M <= kDecodeMaxM. Measured on the H200 at M = 32 (decode suite, same run): the tile family
// took 14.2, 33.2 and 15.3-20.4 us where this family's best forced configuration took 19.8,
// 54.5 and 26.6-35.9 (its A rows cost L1 and L2 traffic per CTA, and 32 rows leave fewer CTAs
// resident); at M <= 16 this family was the faster. A forced "mma ..." runs at any M.
inline constexpr int64_t kDecodeMaxM = 16;
// Weight-only B (problem.weight_format) runs on the decode family alone, its 32-row tiles
// reading B again from L2 for each 32 rows past the first, up to this M; past it the
// dequantised weight and the BF16 kernels are the way (plan_gemm refuses, naming the rule).
inline constexpr int64_t kWeightOnlyMaxM = 256;
std::vector<GemmConfig> decode_configs(const GemmProblem& problem, const GpuInfo& device);

// The order of Plan::candidates in words, for `plan --top` (rank_candidates in gemm_search.cpp
// is the rule): not strictly by predicted time, since the model does not resolve 2%.
inline constexpr const char* kCandidateOrder =
    "the planner's order: predicted times within 2% tie, and ties go to fewer waves, then more "
    "SMs busy in the last wave, fewer tiles, smaller clusters, one row tile of weight-only B "
    "with split-K; the first is the choice";

// The single configuration of the vendor path (instruction = vendor, tile fields zero: the
// library picks its own).
GemmConfig vendor_config();

}  // namespace autogemm::plan
