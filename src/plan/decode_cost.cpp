// The decode family's cost model. Its kernel moves each byte of B once from DRAM into registers
// and spends almost nothing on arithmetic (mma.sync with A's few rows as the 8-wide side), so
// the time is a byte stream:
//   stream   A, B and D once, at the lower of the device's streaming rate and what the bytes in
//            flight sustain (Little's law: each resident warp has about 1.5 steps of B on its
//            way, each round trip ~1 us under load); a grid that leaves SMs with fewer CTAs
//            than others runs at the busiest SM's pace;
//   L2       B again for every block_m rows of A past the first (the other row tiles' CTAs
//            read it from L2), and A once per CTA, at the L2's aggregate rate;
// plus the launch and, with split-K, the last split's reduction round trips.
// Fitted to 1400 forced configurations of the decode suite (BF16 and block-scaled FP8, M = 1 to
// 32, H200, docs/perf/README.md): the planner's pick from this model is 6% slower than the
// fastest measured configuration on average at M <= 16 (the constants below; log-RMS error of
// the times 0.27).
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
// B bytes a resident warp has in flight, in steps (double-buffered registers), and the round
// trip they wait for under load.
constexpr double kStepsInFlight = 1.5;
constexpr double kRoundTripUs = 1.0;
// L2 -> SM aggregate rate for bytes read again (row tiles of A past the first, A per CTA).
constexpr double kL2AggregateGbps = 6000;
// Launch of a kernel back to back in a stream, as the bench measures it.
constexpr double kLaunchUs = 4.0;
// The last split's chain: count, wait for the flags, read the slots (split_k_reduce.cuh).
constexpr double kSplitReduceUs = 1.0;
// Past 8 rows of A (16-row tiles: twice the mma.sync and A loads a B byte, fewer CTAs an SM)
// the stream above is optimistic: the planner's picks on the H200 decode suite at M = 16 ran
// 1.07-1.64x this model's time (mean 1.35 over BF16 and block-scaled FP8, 10 rows), where
// the tile family's picks ran 0.88-1.21x its own. Charged to the stream term, so the ranking
// inside the family does not change; the tile family now wins the rows it was measured to
// win at M = 16 (16 x 24576 x 1536 BF16: 23.4 against 31.3 us; 16 x 14336 x 4096 FP8: 21.1
// against 32.1).
constexpr double kWideAStreamFactor = 1.3;
constexpr int64_t kNarrowAMaxRows = 8;
// SM limits (CUDA occupancy rules for sm_90): 64K registers, 16 CTAs, 2048 threads.
constexpr int kRegistersPerSm = 65536;
constexpr int kMaxCtasPerSm = 16;
constexpr int kThreadsPerCta = 128;
// Per lane beside the step's vectors and the accumulators: row pointers, predicates, loop.
// Block-scaled FP8 also keeps scale addresses and values: at 40 there, 16x64x384 spilled 32 B
// under the 168-register cap of 3 CTAs per SM (NVRTC, CUDA 13.0).
constexpr int kRegisterOverhead = 40;
constexpr int kBlockScaledRegisterOverhead = 72;

}  // namespace

int decode_registers(const GemmProblem& problem, const GemmConfig& config) {
  const int accumulators = config.block_m / 8 * 4;
  const int block_sums = problem.scaling == Scaling::block_1x128_128x128 ? accumulators : 0;
  // Two steps' vectors: the one multiplied and the next one in flight.
  return 8 * decode_step_vectors(problem, config) + accumulators + block_sums +
         (block_sums > 0 ? kBlockScaledRegisterOverhead : kRegisterOverhead);
}

int decode_ctas_per_sm(const GemmProblem& problem, const GemmConfig& config) {
  // Registers are allocated per warp in units of 256 (8 per lane).
  const int per_lane = std::min(255, (decode_registers(problem, config) + 7) / 8 * 8);
  return std::max(1, std::min(kMaxCtasPerSm, kRegistersPerSm / (per_lane * kThreadsPerCta)));
}

Prediction predict_decode(const GemmProblem& problem, const GemmConfig& config,
                          const GpuInfo& device) {
  Prediction p;
  const int64_t m_tiles = ceil_div(problem.m, config.block_m);
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
  const double b_bytes = double(problem.n) * problem.k * in_bytes;
  const double a_cta = config.block_m * double(problem.k) / config.split_k * in_bytes;
  p.dram_bytes = problem.min_bytes();
  p.l2_bytes = double(m_tiles - 1) * b_bytes + double(ctas) * a_cta;

  // Little's law over the SMs: each holds up to ctas_per_sm CTAs of four warps.
  const int64_t busiest_sm_ctas = ceil_div(ctas, sms);
  const double in_flight_per_sm = double(std::min<int64_t>(ctas_per_sm, busiest_sm_ctas)) * 4 *
                                  16 * config.block_k * in_bytes * kStepsInFlight;
  const double rate = std::min(device.memory_bandwidth_gbps * 1e3 * kStreamDramEfficiency,
                               double(sms) * in_flight_per_sm / kRoundTripUs);   // B/us
  p.memory_us = rate > 0 ? p.dram_bytes / rate : 0;
  if (ctas < resident) p.memory_us *= double(busiest_sm_ctas) * double(sms) / double(ctas);
  p.l2_us = p.l2_bytes / (kL2AggregateGbps * 1e3);
  p.compute_us = 0;
  p.fixed_us = kLaunchUs + (config.split_k > 1 ? kSplitReduceUs : 0.0);
  const double stream_us = std::max(p.memory_us, p.l2_us);
  p.time_us = stream_us * (problem.m > kNarrowAMaxRows ? kWideAStreamFactor : 1.0) + p.fixed_us;
  p.tflops = problem.flops() / p.time_us / 1e6;
  return p;
}

}  // namespace autogemm::plan
