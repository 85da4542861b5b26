// The decode family's cost model. Its kernel moves each byte of B once from DRAM into registers
// and spends almost nothing on arithmetic (mma.sync with A's few rows as the 8-wide side), so
// the time is a byte stream:
//   stream   A, B and D once, at the lower of the device's streaming rate and what the bytes in
//            flight sustain (Little's law: each resident warp has about 1.5 steps of B on its
//            way, each round trip ~1 us under load, counted over the CTAs resident at once);
//   tail     a grid past one wave of resident CTAs: half of one CTA's own chain of round
//            trips (its B bytes over its bytes in flight), which the last CTAs run after the
//            others have left;
//   L2       B again for every block_m rows of A past the first (the other row tiles' CTAs
//            read it from L2), and A once per CTA, at the L2's aggregate rate;
// plus the launch and, with split-K, the last split's reduction round trips.
// Fitted to forced configurations of the decode suite (BF16 and block-scaled FP8, M = 1 to 32,
// H200, docs/perf/README.md): 1625 of them on 2026-11-25, where the planner's pick from this
// model is 5.6% (BF16) and 0% (FP8) slower than the fastest measured configuration on average
// at M <= 8. The model before the tail term, which charged a one-wave grid for its busiest
// SM, picked 11.8% / 6.2% slower: 1 x 7168 x 2048 ran mma 8x16x128, 448 CTAs at 3 an SM (134
// registers), 1.13 waves, in 15.4 us, where mma 8x16x64 (6 an SM, one wave) took 13.0 (ncu:
// 14.5 against 11.6 us of kernel).
#include "plan/decode_cost.hpp"

#include <algorithm>
#include <cmath>

#include "plan/rules.hpp"

namespace autogemm::plan {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Streaming rate: 3.7 TB/s of the H200's 4.8 reached by the best configurations on the
// largest rows (117 MB), launch included; cuBLASLt reaches the same there.
constexpr double kStreamDramEfficiency = 0.77;
// The warp rings (num_stages >= 2) copy whole 128-byte lines, where the register loads touch
// half lines of 8 rows an instruction: on the 2026-11-25 sweep (H200) their best configurations
// streamed the 117 MB rows at 4.3 TB/s, the registers' at 3.4. Their first step lands before
// any arithmetic, and each step costs its warp a wait, a warp barrier and its ldmatrix chain:
// fitted, 0.5 us once and 0.01 us a step of the longest warp. And a warp's steps land at most
// num_stages - 1 per round trip of 1.3 us (fitted on the same sweep).
constexpr double kRingDramEfficiency = 0.90;
constexpr double kRingChainRoundTripUs = 1.3;
constexpr double kRingStartUs = 0.5;
constexpr double kRingStepUs = 0.01;
// Weight-only B in registers: with one step ahead each warp's step took 1.7-2.0 us (launch
// removed, over its steps) on the M = 1 decode rows (H200, bench --weights int4-g128,
// 2026-11-29: 8x32x256 at 8 steps a warp 19.6 us, 8x64x256 at 6 steps 14.1 us, 8x64x256 sk6 at
// 9.3 steps 20.7 us): a chain whose first step waits a whole round trip and the others one
// divided by the steps in flight. More steps ahead stop paying at about 1 us a step: 8x64x256
// with 3 ahead ran 1 x 14336 x 4096's 16 steps a warp in 20.4 us, not the 13.6 that 0.6 us a
// step predicted (Nsight Compute: latency-bound, issue on 40% of cycles, 1.65-1.8 warps a
// scheduler, DRAM at 34% of peak, the same time with the weights left in L2);
// M = 64 with 3 ahead, 1.41 us a step (117 -> 94 us). Each wave pays the first round trip: a
// floor without it sent those rows to split-K at 8 (1 x 14336 x 4096 28.1 us, 16 x 14336 x 4096
// 59.7 against 33 for BF16: many short waves).
constexpr double kWeightStepRoundTripUs = 1.8;
constexpr double kWeightStepFloorUs = 1.0;
// B bytes a resident warp has in flight, in steps (double-buffered registers; a ring's
// num_stages - 1), and the round trip they wait for under load.
constexpr double kStepsInFlight = 1.5;
constexpr double kRoundTripUs = 1.0;
// The share of the last CTA's chain of round trips a grid past one wave adds (0.25 to 1.0 fit
// the 2026-11-25 sweep equally; the middle).
constexpr double kTailChainShare = 0.5;
// L2 -> SM aggregate rate for bytes read again (row tiles of A past the first, A per CTA).
constexpr double kL2AggregateGbps = 6000;
// Launch of a kernel back to back in a stream, as the bench measures it.
constexpr double kLaunchUs = 4.0;
// The last split's chain: count, wait for the flags, read the slots (split_k_reduce.cuh).
constexpr double kSplitReduceUs = 1.0;
// Past 8 rows of A (16-row tiles: twice the mma.sync and A loads a B byte, fewer CTAs an SM)
// the stream above is optimistic: on the 2026-11-25 sweep (H200, BF16 and block-scaled FP8)
// the model's own picks ran 1.30x its time at M = 16 against 1.10x at M <= 8. Charged to the
// stream term, so the ranking inside the family does not change; at 1.4 the tile family keeps
// the M = 16 rows it was measured to win (16 x 7168 x 2048 FP8: 9.7 us against the decode
// family's best 12.3; 16 x 24576 x 1536 BF16: 23.4 against 31.3), where 1.3 gave one of them
// to a decode configuration.
constexpr double kWideAStreamFactor = 1.4;
constexpr int64_t kNarrowAMaxRows = 8;
// The warp rings hold A's rows in shared memory, not registers: at M = 16 their best BF16
// configurations ran 1.00-1.26x the model's stream (mean 1.13; 2026-11-25 sweep, H200).
// Block-scaled FP8 rings at M = 16 ran 1.23-1.67x (192 registers at 16x64x256: the two groups'
// block sums and scales), and the tile family or the register path measured faster on all five
// decode rows: charged 1.8x, the rings lose them.
constexpr double kRingWideAStreamFactor = 1.15;
constexpr double kBlockScaledRingWideAStreamFactor = 1.8;
// SM limits (CUDA occupancy rules for sm_90): 64K registers, 16 CTAs, 2048 threads.
constexpr int kRegistersPerSm = 65536;
constexpr int kMaxCtasPerSm = 16;
constexpr int kThreadsPerCta = 128;
// Shared memory an SM holds (sm_90: 228 KB) and the part it reserves for each CTA.
constexpr int kSmemPerSm = 228 * 1024;
constexpr int kSmemPerCta = 1024;
// Per lane beside the step's vectors and the accumulators: row pointers, predicates, loop.
// Block-scaled FP8 also keeps scale addresses and values: at 40 there, 16x64x384 spilled 32 B
// under the 168-register cap of 3 CTAs per SM (NVRTC, CUDA 13.0).
constexpr int kRegisterOverhead = 40;
constexpr int kBlockScaledRegisterOverhead = 72;
// Weight-only B: addresses, predicates and the loop, beside the operands counted. 40: at 24,
// int4 16x64x128 with 4 steps ahead was given 3 CTAs an SM (168 registers) and spilled 28 B
// (NVRTC, CUDA 13.0); WeightOnly.PlannersPicksCompileWithoutSpills checks the planner's picks.
constexpr int kWeightRegisterOverhead = 40;
// ... and split-K's reduction (its slots' addresses and flags, and past 8 splits the slots'
// loads in flight): int8 16x32x64 s4 took 116 registers at sk2..sk8, 126 at sk12, 156 at
// sk16 and spilled at sk32 under 168; 16x64x128 s3 sk32 spilled 20 B at 3 CTAs an SM.
constexpr int kWeightSplitRegisters = 16;
constexpr int kWeightRegistersPerSplit = 5;
// INT4 and INT8 keep 8. INT4's 8x64x128 s2 uses all 168 registers of 3 CTAs an SM (239-243
// uncapped) without spilling; counted at 16 for it, the picks moved to 2 CTAs an SM: 1..8 x
// 24576 x 1536 ran 1.054-1.071x, but every MoE decode row went 8x64x128 s2 -> 8x64x256 and the
// suite ran 0.875x (int4-g128-zp, 8 rows, 0.71-1.07; INT8 at 16 0.987-0.994; H200, 2026-12-02).
constexpr int kWeightSecondTileRegisters = 8;
// MXFP4's second tile: its scale multiplies need more. Counted at 8, 8x64x128 s2 was given 3
// CTAs an SM (168 registers) and spilled 4 bytes at K = 768, 1536 and 7168 (NVRTC, CUDA 13.0);
// at 16 it gets 2 (235 registers): mxfp4 decode suite 1.012x, 1..8 x 14336 x 4096 23.5 -> 22.3
// us, 1..8 x 24576 x 1536 15.8 -> 14.8 (8x64x128 s1 there; H200, alternated twice).
constexpr int kWeightSecondTileRegistersMxfp4 = 16;

bool is_ring(const GemmProblem& problem, const GemmConfig& config) {
  return config.num_stages > 1 && !problem.weight_format;   // weight-only: registers
}

// Warps of the CTA that split its K steps (sm90/decode_kernel.cuh DecodeGeometry::kWarpsK):
// four warps, block_n / (16 x row tiles) of them along N.
int warps_along_k(const GemmProblem& problem, const GemmConfig& config) {
  return 4 / (config.block_n / (16 * decode_row_tiles(problem, config)));
}

}  // namespace

int decode_registers(const GemmProblem& problem, const GemmConfig& config) {
  const int groups = config.block_m / 8;
  const int tiles = decode_row_tiles(problem, config);
  const int accumulators = tiles * groups * 4;
  // Block sums: block-scaled FP8's per 128 of K, int4's per scale group (sm90/decode_kernel.cuh
  // weight_multiply). MXFP4 accumulates in place but its two bf16 multiplies a pair and the
  // span's scales need as many: counted without them, 2 of 45 picks spilled 8 bytes at 168.
  // int4's second set (the group's sums of A) is left out: every pick compiles without spills
  // (WeightOnly.PlannersPicksCompileWithoutSpills, the decode suite), and counting it moved
  // M = 16 picks to slower ones (16 x 14336 x 4096: 1.02 -> 0.85 of our BF16, H200).
  // With two row tiles the block sums are one tile's at a time.
  const bool int4 = problem.weight_format && *problem.weight_format != WeightFormat::int8_channel;
  const int block_sums =
      problem.scaling == Scaling::block_1x128_128x128 || int4 ? accumulators / tiles : 0;
  const int weight_overhead =
      kWeightRegisterOverhead +
      (config.split_k > 1
           ? kWeightSplitRegisters + kWeightRegistersPerSplit * std::max(0, config.split_k - 8)
           : 0);
  const int overhead = problem.weight_format ? weight_overhead
                       : block_sums > 0      ? kBlockScaledRegisterOverhead
                                             : kRegisterOverhead;
  // Registers: two steps' vectors, the one multiplied and the next one in flight. Warp ring:
  // one chunk's fragments (B's 2 x 4, A's 4 a group), the steps wait in shared memory.
  // Weight-only: the vectors as decode_step_vectors counts them (num_stages + 1 steps of B, one
  // of A), a chunk's dequantised pairs of B's two rows, and each slot's scales and zeros (a
  // register each per chunk).
  const int chunks = config.block_k / decode_chunk_elements(problem);
  const int operands = is_ring(problem, config) ? 8 + 4 * groups
                       : problem.weight_format
                           ? 4 * decode_step_vectors(problem, config) +
                                 decode_chunk_elements(problem) / 4 +
                                 2 * tiles * chunks * (config.num_stages + 1)
                           : 8 * decode_step_vectors(problem, config);
  // Two row tiles: the second tile's dequantised pairs partly live beside the first's (int4
  // 16x64x128 s1 spilled 4 bytes at 168 registers counted without them).
  const bool mxfp4 = problem.weight_format && *problem.weight_format == WeightFormat::mxfp4;
  const int second_tile =
      tiles > 1 ? (mxfp4 ? kWeightSecondTileRegistersMxfp4 : kWeightSecondTileRegisters) : 0;
  return operands + accumulators + block_sums + overhead + second_tile;
}

int decode_ctas_per_sm(const GemmProblem& problem, const GemmConfig& config) {
  // Registers are allocated per warp in units of 256 (8 per lane).
  const int per_lane = std::min(255, (decode_registers(problem, config) + 7) / 8 * 8);
  int ctas = std::min(kMaxCtasPerSm, kRegistersPerSm / (per_lane * kThreadsPerCta));
  if (is_ring(problem, config)) {
    // The warp rings, the K warps' sums (sm90/decode_kernel.cuh decode_sum_warps: a float4 per
    // lane of the N warps and 8-row group, for each K warp past the first) and the 1 KB the SM
    // reserves per CTA.
    const int sums = (warps_along_k(problem, config) - 1) * (config.block_m / 8) * (config.block_n / 16) *
                     32 * 16;
    ctas = std::min(ctas, kSmemPerSm / (decode_ring_bytes(problem, config) + sums + kSmemPerCta));
  }
  return std::max(1, ctas);
}

Prediction predict_decode(const GemmProblem& problem, const GemmConfig& config,
                          const GpuInfo& device) {
  Prediction p;
  // Masked groups (weight-only): each group's expected rows in tiles of their own; the tiles
  // past a group's valid rows exit before reading anything (sm90/decode_kernel.cuh).
  const bool masked = problem.grouping == Grouping::masked;
  const int64_t groups = masked ? problem.num_groups : 1;
  const int64_t group_m_tiles =
      ceil_div(masked ? problem.expected_group_rows() : problem.m, config.block_m);
  const int64_t m_tiles = groups * group_m_tiles;
  const int64_t tiles = m_tiles * ceil_div(problem.n, config.block_n);
  const int64_t ctas = tiles * config.split_k;
  const int64_t sms = std::max(1, device.sm_count);
  const int ctas_per_sm = decode_ctas_per_sm(problem, config);
  const int64_t resident = int64_t(ctas_per_sm) * sms;
  p.num_tiles = ctas;
  p.waves = ceil_div(ctas, resident);
  p.busy_sms = int(std::min<int64_t>(ctas, sms));
  p.last_wave_utilization =
      double(std::min<int64_t>(ctas - (p.waves - 1) * resident, resident)) / double(resident);
  p.mma_efficiency = 1.0;

  const double in_bytes = dtype_bytes(problem.a_type);
  const double b_element_bytes = decode_b_bits(problem) / 8.0;   // weight-only: packed
  const double b_bytes = problem.b_bytes();
  const double a_cta = config.block_m * double(problem.k) / config.split_k * in_bytes;
  p.dram_bytes = problem.min_bytes();
  p.l2_bytes = double(group_m_tiles - 1) * double(groups) * b_bytes + double(ctas) * a_cta;

  // Little's law over the CTAs resident at once, four warps each. (Charging a grid that leaves
  // some SMs with fewer CTAs at the busiest SM's pace picked worse: the DRAM's rate is shared,
  // and the SMs that finish first leave it to the others.)
  const bool ring = is_ring(problem, config);
  const double steps_in_flight = ring                    ? config.num_stages - 1
                                 : problem.weight_format ? config.num_stages + 0.5
                                                         : kStepsInFlight;
  const double cta_in_flight = 4.0 * 16 * decode_row_tiles(problem, config) * config.block_k *
                               b_element_bytes * steps_in_flight;
  const double efficiency = ring ? kRingDramEfficiency : kStreamDramEfficiency;
  const double rate = std::min(device.memory_bandwidth_gbps * 1e3 * efficiency,
                               double(std::min(ctas, resident)) * cta_in_flight / kRoundTripUs);
  p.memory_us = rate > 0 ? p.dram_bytes / rate : 0;   // rate in B/us
  if (ctas > resident) {
    const double cta_b_bytes =
        double(config.block_n) * double(problem.k) / config.split_k * b_element_bytes;
    p.memory_us += kTailChainShare * cta_b_bytes / cta_in_flight * kRoundTripUs;
  }
  p.l2_us = p.l2_bytes / (kL2AggregateGbps * 1e3);
  p.compute_us = 0;
  p.fixed_us = kLaunchUs + (config.split_k > 1 ? kSplitReduceUs : 0.0);
  double chain_us = 0;
  if (ring) {
    const int64_t warp_steps = ceil_div(
        ceil_div(ceil_div(problem.k, config.block_k), config.split_k), warps_along_k(problem, config));
    p.fixed_us += kRingStartUs + kRingStepUs * double(warp_steps);
    chain_us = double(warp_steps) * kRingChainRoundTripUs / (config.num_stages - 1);
  } else if (problem.weight_format) {
    // Each warp's steps wait their B in turn, num_stages of them on the way at once; a grid
    // past one wave of resident CTAs runs the chain once a wave (M = 64 with one step ahead:
    // 2 waves of 32 steps, 117 us measured against 2 x 57.6 chained).
    const int64_t warp_steps = ceil_div(
        ceil_div(ceil_div(problem.k, config.block_k), config.split_k), warps_along_k(problem, config));
    chain_us = double(p.waves) *
               (kWeightStepRoundTripUs +
                double(warp_steps - 1) *
                    std::max(kWeightStepRoundTripUs / config.num_stages, kWeightStepFloorUs));
  }
  const double stream_us = std::max({p.memory_us, p.l2_us, chain_us});
  const double wide = !ring ? kWideAStreamFactor
                     : problem.scaling == Scaling::block_1x128_128x128 ? kBlockScaledRingWideAStreamFactor
                                                                        : kRingWideAStreamFactor;
  p.time_us = stream_us * (problem.m > kNarrowAMaxRows ? wide : 1.0) + p.fixed_us;
  p.tflops = problem.flops() / p.time_us / 1e6;
  return p;
}

}  // namespace autogemm::plan
