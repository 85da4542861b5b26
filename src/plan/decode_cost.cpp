// The decode family's cost model. Its kernel moves each byte of B once from DRAM into registers
// and spends almost nothing on arithmetic (mma.sync with A's few rows as the 8-wide side), so
// the time is a byte stream:
//   DRAM     every byte of A, B, (C) and D once, at the device's streaming rate;
//   SM port  the busiest SM's bytes (B, and A again from L2 per CTA) through its L2 port;
//   latency  each warp runs its steps one after another (a step's loads, then its multiplies),
//            so an SM whose CTAs are few pays a DRAM round trip per step;
// plus the launch and, with split-K, the last split's reduction round trips.
#include "plan/decode_cost.hpp"

#include <algorithm>
#include <cmath>

#include "plan/rules.hpp"

namespace autogemm::plan {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A stream that only reads through the non-coherent path reaches about what a device copy
// does: 4258 GB/s of the H200's 4800 counting read and write (docs/perf/README.md), 89%.
constexpr double kStreamDramEfficiency = 0.89;
// L2 -> SM port of one SM with every SM pulling (cost_model.cpp: 57 B/clk measured on the
// H100 decode rows).
constexpr double kPortBytesPerClock = 57;
// One step's loads, issued together and waited for together, under load: a DRAM round trip.
constexpr double kStepLatencyUs = 0.9;
// Launch of a kernel back to back in a stream, as the bench measures it (cost_model.cpp).
constexpr double kLaunchUs = 4.0;
// The last split's chain: count, wait for the flags, read the slots (three L2 round trips,
// split_k_reduce.cuh).
constexpr double kSplitReduceUs = 1.2;
// SM limits (CUDA occupancy rules for sm_90): 64K registers, 16 CTAs, 2048 threads.
constexpr int kRegistersPerSm = 65536;
constexpr int kMaxCtasPerSm = 16;
constexpr int kThreadsPerCta = 128;
// Per lane beside the step's vectors and the accumulators: row pointers, predicates, loop.
// Block-scaled FP8 also keeps scale addresses and values: at 40 there, 16x64x384 spilled 32 B
// under the 168-register cap of 3 CTAs per SM (NVRTC, CUDA 13.0).
constexpr int kRegisterOverhead = 40;
constexpr int kBlockScaledRegisterOverhead = 72;

double clock_ghz(const GpuInfo& device) {
  return device.sm_clock_khz > 0 ? device.sm_clock_khz / 1e6 : 1.5;
}

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
  const int64_t tiles = ceil_div(problem.m, config.block_m) * ceil_div(problem.n, config.block_n);
  const int64_t ctas = tiles * config.split_k;
  const int64_t sms = device.sm_count;
  const int64_t resident = int64_t(decode_ctas_per_sm(problem, config)) * sms;
  p.num_tiles = ctas;
  p.waves = ceil_div(ctas, resident);
  p.busy_sms = int(std::min<int64_t>(ctas, sms));
  p.last_wave_utilization = double(std::min<int64_t>(ctas - (p.waves - 1) * resident, resident)) /
                            double(resident);
  p.mma_efficiency = 1.0;

  const double in_bytes = dtype_bytes(problem.a_type);
  const double k_per_cta = double(problem.k) / config.split_k;
  const double b_cta = config.block_n * k_per_cta * in_bytes;
  const double a_cta = config.block_m * k_per_cta * in_bytes;   // from L2, once per CTA
  p.dram_bytes = problem.min_bytes();
  p.l2_bytes = double(ctas) * (a_cta + b_cta);

  const double dram_rate = device.memory_bandwidth_gbps * 1e3 * kStreamDramEfficiency;  // B/us
  const double port_rate = kPortBytesPerClock * clock_ghz(device) * 1e3;                // B/us
  const int64_t busiest_sm_ctas = ceil_div(ctas, sms);
  p.memory_us = dram_rate > 0 ? p.dram_bytes / dram_rate : 0;
  p.l2_us = double(busiest_sm_ctas) * (a_cta + b_cta) / port_rate;
  const int64_t steps = ceil_div(problem.k, config.block_k);
  const int warps_k = 4 / (config.block_n / 16);
  const double steps_per_warp = std::ceil(double(ceil_div(steps, config.split_k)) / warps_k);
  const double sm_rounds =
      std::ceil(double(busiest_sm_ctas) / decode_ctas_per_sm(problem, config));
  const double latency_us = sm_rounds * steps_per_warp * kStepLatencyUs;
  p.compute_us = 0;
  p.fixed_us = kLaunchUs + (config.split_k > 1 ? kSplitReduceUs : 0.0);
  p.time_us = std::max({p.memory_us, p.l2_us, latency_us}) + p.fixed_us;
  p.tflops = problem.flops() / p.time_us / 1e6;
  return p;
}

}  // namespace autogemm::plan
