// The cost model: predicted time of one configuration on one device, from a few hardware
// rates and the shape of the work. It is deliberately simple, and every term lands in
// Prediction so that the bench can set it beside a measurement and show which term was wrong.
//
// The model (one CTA per SM; see "Occupancy" below):
//   tiles   = ceil(M / block_m) * ceil(N / block_n); the CTAs that run at once ("resident") are
//             the SMs rounded down to whole clusters; waves = ceil(tiles / resident).
//   Per wave every busy SM computes one tile, so a wave lasts as long as one tile takes on one
//   SM, limited by the slowest of three resources:
//     compute: the tile's flops over the SM's share of the matrix-unit peak x an efficiency,
//     L2:      the A and B bytes the tile pulls from L2 over the SM's L2 bandwidth,
//     DRAM:    the wave's share of all DRAM bytes over the device's DRAM bandwidth.
//   time = sum over waves of max(compute, L2, DRAM) + fixed costs (launch, pipeline fill,
//          the epilogue of each tile).
// A last wave that leaves SMs idle costs a full tile time all the same; that is what makes
// narrower tiles win for shapes like M=256, N=7168 on 132 SMs (112 tiles of 128x128 leave 20
// SMs idle; 128 tiles of 128x112 keep 128 busy and each tile is shorter).

#include <algorithm>
#include <cmath>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "kernels/sm90/gemm_layout.cuh"
#include "kernels/sm90/stream_k.cuh"
#include "plan/decode_cost.hpp"
#include "plan/n_tail.hpp"
#include "plan/operand_copy.hpp"
#include "plan/rules.hpp"
#include "plan/swap_ab.hpp"

namespace autogemm {

namespace {

// ---- Matrix units --------------------------------------------------------------------------
// peak_*_tflops() assumes the maximum SM clock; under a full GEMM an H100 SXM holds about
// 1.75 GHz of its 1.98 GHz (power limit) and loses a little to barrier waits: cuBLAS reaches
// 776-800 of the 1070 TFLOP/s implied by 1.98 GHz (hopper-facts.md 0.4, 7).
constexpr double kSustainedMmaShare = 0.85;
// One m64nNk16 wgmma keeps the tensor cores busy N/2 cycles, but its A (2 KB) and B (32*N B)
// come from shared memory at 128 B/clk and part of that fetch and the issue is not hidden: we
// count ~8 exposed cycles per instruction, so efficiency = N / (N + 16): 0.94 at N=256, 0.89
// at 128, 0.8 at 64, 0.5 at 16 (N >= 128 amortises the shared-memory reads, hopper-facts 2.2).
constexpr double kWgmmaExposedHalfCycles = 16;
// A lone consumer warpgroup idles the tensor cores while it waits on a full barrier and
// releases stages; a second one fills those gaps (DeepGEMM runs two math warpgroups for this).
constexpr double kSingleConsumerShare = 0.9;
// Ping-pong tiles of one m64 slab run further below it: forced on the public suite's fused
// rows (H200, 2026-12-02, bias bf16 and plain, against each tile's prediction), 64x256 pp took
// 1.01-1.10x its predicted time where 128-row ping-pong tiles took 0.96-1.00x and cooperative
// 128x256 0.92-0.95x, so it was ranked first and ran 7-13% behind both (4096 x 24576 x 1536
// 453.5 us against 128x192 cl2x1 421.6; 4096 x 32768 x 512 235.5 against 128x160 pp 209.1).
constexpr double kPingPongOneSlabShare = 0.92;

// ---- Memory --------------------------------------------------------------------------------
// A GEMM that streams B (decode shapes) reaches ~75% of theoretical DRAM bandwidth: measured
// 3.4 TB/s of 4.8 on an H200 for M=64, N=7168, K=16384.
constexpr double kDramEfficiency = 0.75;
// L2 -> SM bandwidth per SM. NVIDIA publishes no Hopper figure (A100: 5120 B/clk for 108 SMs,
// ~47 B/clk/SM); we take 64 B/clk/SM at 80% efficiency. With it a 128x128 bf16 tile is just
// L2-bound and 128x256 is not, matching where multicast starts to pay. Calibrate with bench.
constexpr double kL2BytesPerClockPerSm = 64;
constexpr double kL2Efficiency = 0.8;
// Swapped tiles of one consumer and 64 rows (the call's rows along wgmma's N, every CTA reading
// the same few tiles of them) take their L2 -> SM term at 0.8: forced on seven partial-wave rows
// (H200, 2026-12-02, probes/swap-one-consumer-configs-bf16.txt), where that term bounds them,
// they ran 0.77-0.83 of their predictions, within 2-7% of their matrix-unit term, against
// 0.93-1.06 for the two-consumer swapped picks beside them. At 0.8 (0.85-0.90 of predicted) the
// planner moves one row: 400 x 12288 x 4096 128x104 c2 -> 64x200 c1, 74.4 -> 58.3 us.
constexpr double kSwappedOneConsumerL2Share = 0.8;
// The L2 as a whole delivers less than every SM's port at once. Measured on the H100 decode
// rows with every SM pulling: a k-block costs ~63 cycles plus
// its bytes at ~64 B/clk per SM (BF16 64x16 one atom 223 cycles for 10 KB, two atoms 383 for
// 20 KB; FP8 64x16 238 for 10 KB), at the ~1.76 GHz those kernels ran. In the model's clock
// (the device's maximum, 1.98 GHz on the H100) that is 57 B/clk and 71 cycles. The H200
// calibration this replaces (40 B/clk, no per-k-block term) overcharged two-atom k-blocks by
// 25%, so the planner preferred a split or a multicast pair to the faster unsplit 64x16x128.
constexpr double kL2AggregateBytesPerClockPerSm = 57;
constexpr double kL2AggregateKBlockCycles = 71;
// Share of the L2 an operand may occupy and still be reused: H100's L2 is two ~25 MB halves
// and a line read by SMs on both sides can be held in both, so only ~half of it is usable.
constexpr double kL2ReuseShare = 0.5;

// ---- Fixed costs ---------------------------------------------------------------------------
// A kernel launch, back to back in a stream, as the bench measures it (3-5 us).
constexpr double kLaunchUs = 4.0;
// Before the first wgmma: barrier init, tensor-map prefetch and one DRAM round trip for the
// first stage (~0.6-0.8 us on HBM). Paid once per CTA; a persistent CTA prefetches the next
// tile's stages while it finishes the current one, so it pays this once in total.
constexpr double kFirstLoadLatencyUs = 0.8;
// Each k-block costs a consumer a full-barrier wait, a wgmma batch, a wait_group and a release
// (plus the producer's TMA issue) even when it is tiny; for small tiles this latency chain, not
// bandwidth, sets the time. Measured on an H200: M=64, N=2112, K=7168 with 64x16
// tiles, 112 k-blocks per CTA, took 27 us where bandwidth alone predicts ~14.
constexpr double kKBlockLatencyUs = 0.18;
// When every tile of one operand is read by one CTA only (one row of tiles: M <= block_m, or
// one column), each stage waits for DRAM, and a CTA's ring of num_stages stages passes at most
// once per loaded DRAM round trip, however few bytes a stage holds. Measured on an H200 at
// M = 32 (K 7168-14336, 64-row tiles 32-128 wide, 4-8 stages, split 1-4): 3.8-4.1 us a pass
// where the SMs together read 1.6-3.1 TB/s; 32 x 4096 x 14336 in 64x32x128 s8 tiles took 54.6
// us (13 passes after the fill) where 64x128x128 s4 split 4 took 36.7 (6, then DRAM-bound).
constexpr double kDramRingPassUs = 3.8;
// A 2-stage ring cannot cover a TMA round trip while the other stage is being consumed:
// 256x160 s2 ran 0.71x cuBLASLt at 4096x32768x512 where 128x256 s3 ran 0.97x.
constexpr double kTwoStageShare = 0.8;
// A ring of MN-major stages (layout tn: weight gradients' dY and X as stored) keeps s - 1
// stages in flight while the consumers read one, and each lands ~1.3 us after its issue, so
// the k-loop runs no faster than s - 1 k-blocks per 1.3 us. Fitted on H200 weight gradients
// (2026-11-29, 1c47d05): at K = 16384, 128x192x64 s3 (1.1 us of k-blocks in flight) ran
// 1.14-1.24x the model without it where 128x128x64 s5 (1.5 us) ran 0.96-0.99x; at 2048 tokens
// an expert 128x128x64 s5 ran 5-7% faster than 128x192x64 s3, not 5% slower as the model
// without it said. K-major rings (the forward suites) were not measured against it and keep
// kTwoStageShare alone.
constexpr double kMnMajorStageRoundTripUs = 1.3;
// ---- FP8 promotion (kernels/sm90/fp8_promotion.cuh) ----
// After a k-block's wgmmas a consumer scales its fp32 partial sums into the accumulators: one
// FFMA per fragment register, and each SM sub-partition runs one warp of every consumer
// warpgroup at one FFMA instruction per clock. With one temporary the consumer first waits
// for its wgmmas to drain (wait_group 0), so the tensor cores also lose the pipeline's
// drain and refill: calibrated from 128x160 c2 running at 951 TFLOP/s where the model without
// promotion said 1595 (H100).
constexpr double kPromotionDrainCycles = 260;
// With two temporaries only the last k-block of each chunk of 8 waits (gemm_kernel.cuh).
constexpr double kOverlappedPromotionChunk = 8;
// ---- Shared memory (one SM's port, 128 B/clk) ----
// Every k-block the TMA writes the stage (A and B tiles) into shared memory and every m64 slab's
// wgmmas read their 64 rows of A and all of B from it, so B is read once per slab. FP8 128x128
// needs 80 KB per 512 matrix-unit cycles (the tensor pipe then idles at ~80%, Nsight Compute's
// L1 wavefronts at 79%), and 256-row tiles gain less than their L2 traffic says: 256x128
// measured level with 128x128 and 256x64 19% behind (H100).
constexpr double kSmemBytesPerClock = 128;
// ---- Split-K summed inside the kernel (kernels/sm90/split_k_reduce.cuh) ----
// After its main loop every split counts its arrival; the others store their fp32 tile and
// raise a flag, and the last one waits for the flags and reads the tiles back: three to four
// dependent L2 round trips when the splits finish together. Measured on the H100 decode rows
// on the H100: 1.7-2.5 us more than a plain epilogue, of which the bytes term below
// gives 0.2-0.6.
constexpr double kSplitKReduceLatencyUs = 1.5;
// ---- The epilogue's TMA store, by box ----
// D is staged and stored in 128-byte column boxes plus one tail box (kernels/sm90/gemm_layout.cuh
// d_boxes): 256 bf16 columns as 4 boxes, 240 as 4 (3 of 64 and one of 48). Tile traces of
// 128-row, two-consumer tiles (5000 x 3000 x 1000 bf16, block_n 128..256, H200, when every box
// was the widest span dividing block_n) put each tile's epilogue at the bytes term below plus ~3
// SM cycles per box row a consumer stores (2.37 us at 240 columns as 15 boxes of 16 against 1.02
// at 256, 1.37 at 224 as 7 of 32): a tile's box count decides how long its consumers stand idle
// after every tile. Traces of one-consumer 64-row
// tiles did not show it (64x112: 0.37 us for 7 boxes of 16), so it is charged where measured.
constexpr double kEpilogueBoxRowCycles = 3.0;
// A two-consumer tile whose width is not a whole number of 128-byte boxes (a tail box, the
// same d_boxes) runs ~0.4 us a tile slower than its box rows say: per column and wave, 128x240
// tiles took 3.4% longer than 128x256 on 5000 x 3000 x 1000 (0.0574 against 0.0555 us, 4 waves
// each) and 2.3% on 4096 x 24576 x 1536 (25 against 24 waves), 0.47 and 0.37 us a tile; 128x208,
// 128x224 and 128x176 on the first row 0.71, 0.16 and 0.36 (H200, cluster 2x1, TMA store).
constexpr double kEpilogueTailBoxUs = 0.4;
// The fused epilogue's arithmetic (sm90/fused_epilogue.cuh), per output element of a
// two-consumer tile, in ns: the cost over the plain GEMM at 4096 x 32768 x 512 on 128x256 tiles
// (31 tiles per SM, the epilogue exposed: H200, 2026-11-29, c7163c9) was a bias 1.04 us a tile,
// a bias + gelu_tanh 3.18, an fp32 bias + silu + both scales 2.68, a bias + gelu_erf 4.25. A
// one-consumer tile has half the warps to issue it: 64 x 32768 x 512 on 64x128 tiles cost 0.17
// ns an element with a bias + gelu_tanh, against 0.097 here. SiLU and GELU(tanh) into 16-bit or
// FP8 D take one MUFU instruction, not two (fused_epilogue.cuh x_sigmoid): the same row ran
// 1.06 us a tile faster with gelu_tanh (296.3 -> 263.3 us) and 0.70 with silu (277.5 -> 255.7;
// H200, 2026-12-01).
constexpr double kFusedVectorNs = 0.032;   // a bias
constexpr double kFusedScaleNs = 0.008;    // each of row_scale, col_scale
double fused_activation_ns(Activation a, DType d_type) {
  const bool one_mufu = d_type != DType::fp32;
  switch (a) {
    case Activation::none: return 0.0;
    case Activation::relu: return 0.005;
    case Activation::silu: return one_mufu ? 0.014 : 0.035;
    case Activation::gelu_tanh: return one_mufu ? 0.033 : 0.065;
    case Activation::gelu_erf: return 0.10;
  }
  return 0.0;
}
// ---- Tiles whose D outweighs their main loop (short K) ----
// A tile cannot finish faster than its D takes at its SM's share of the DRAM write rate, which
// falls with the length of the row segments the tile writes (block_n x the output's bytes):
// rate x s / (s + 266 B), so 512-byte segments run at 66% of it and 256-byte ones at 49%; plus
// a short turnaround between tiles. Fitted to forced tiles of 10445 x 12664 x 24 bf16 (H200, TMA
// store, the epilogue term below included), per tile: 128x256 c2 4.19 us, 128x192 c2 3.39,
// 128x128 c2 2.70, 256x128 c2 5.20 (the same bytes as 128x256 in half-length segments), 64x256
// c1 2.38, 64x208 c1 2.77; a memset of 264 MB reaches 4.19 TB/s, 87% of the H200's 4.8.
constexpr double kStoreTileTurnaroundUs = 0.21;
// D in chunks (GemmConfig::d_chunk_boxes): each chunk after the first waits for the previous
// chunk's store to have read the one staging buffer, and with C for its own C load's round trip
// before it is staged: the bytes are the tile's as before (tile_times), these latencies are the
// chunks'. Estimates (the store's read of 16-32 KB of staging ~0.3 us, a DRAM round trip ~0.7
// us more), not yet fitted.
constexpr double kDChunkTurnaroundUs = 0.3;
constexpr double kDChunkCLoadUs = 0.7;
// A tile that accumulates into an fp32 D (weight gradients: C is D, far larger than the L2)
// waits for C from DRAM after its k-loop and stores D before its next k-loop starts: its C and
// D take the SM's share of the DRAM rate in series with the k-loop, not beside it. H200 weight
// gradients of experts (2026-11-29, 1c47d05; 48 forced tiles 128x128, 128x192, 128x256 at 64
// to 2048 tokens an expert) fit 32 ns a KB of C and D a tile, the SM's share of 87% of the
// DRAM rate, with no penalty for 512-byte rows (the model's max() of the two was 0.57-1.43x
// the measurement and picked 128x256x64 s2, 1.12x slower than 128x128x64 s5 over the suite).
constexpr double kDramWriteEfficiency = 0.87;
constexpr double kWriteSegmentHalfRateBytes = 266;
// Exponent of the norm that combines a tile's matrix-unit, L2 and shared-memory times
// (overlap() below). FP8: 4, calibrated on 128x128 tiles (H100) and not measured at 8 (its
// promotion already models part of the interference). 16-bit tiles overlap closer to the
// largest term: forced pairs (H200, 2026-11-28) ran the pick of a norm of 8 faster on
// whole-sector rows
// (600 x 8192 x 8192 swapped 128x152 107.4 us against 128x160 cl1x2/a 121.7; 8192^3 without the
// multicast pair 1359 against 1412; 128 x 4096 x 7168 64x64x128 21.2 against 64x128x64 sk2
// 22.9), where at 4 three near terms cost 3^(1/4) = 1.32x the largest and the planner paid for
// pairs and padding to shave an L2 term that was not the limit. The 26 picks it moved over
// seven suites ran 1.016x faster (geomean); lost: 4096 x 32768 x 512 without its pair 205 ->
// 213 us, 399 x 3152 x 4488 paired 128x96 45.2 against swapped 128x80 40.5.
constexpr double kOverlapNormFp8 = 4;
constexpr double kOverlapNorm16Bit = 8;
// ---- Rows off 32-byte sectors ----
// A row pitch of 16 mod 32 bytes (bf16 K = 8 mod 16: 1000, 2616, 24840) starts every other row
// mid-sector, so a 128-byte box row touches 5 sectors where an aligned one touches 4: the TMA
// probe (probes/tma_line_probe.cu, H200) moved L2 -> SM 17-35% slower whatever the box or
// swizzle. Such an operand's L2 bytes are charged 1.3x. It is what keeps the multicast pair on
// these rows under the sharper overlap above: without their pairs 5000 x 3000 x 1000 ran 68.4 us
// against 53.0 and 879 x 11144 x 2616 101.6 against 90.9 (H200, 2026-11-28).
constexpr double kSplitSectorL2Factor = 1.3;
constexpr int64_t kSectorBytes = 32;
// When the SM clock is unknown (hand-built device descriptions).
constexpr double kDefaultClockGhz = 1.5;
// cuBLASLt on a large problem: roughly 75% of peak (hopper-facts.md 0.4 for H100).
constexpr double kVendorMmaShare = 0.75;
// cuBLASLt 13.1 where A's or B's rows are not 16-byte aligned (it is told so, cublaslt.cpp)
// runs kernels without TMA or wide loads. Measured on an H200 (K odd, bf16, nt): 117-131
// TFLOP/s from M = 512 up (12% of the dense peak), 79-85 at M = 128 (8%); decode rows at
// 1.6-2.6 TB/s of their bytes at M = 1, 0.94-1.12 TB/s at M = 8-32 (0.5 and 0.23 of the
// H200's 4.8 TB/s); and ~8 us more than that roofline (64 x 128 x 1001: 12.7 us, 300 x 777 x
// 1001: 20.7, 1 x 4096 x 4097: 21.2).
constexpr double kUnalignedVendorMmaShare = 0.12;
constexpr double kUnalignedVendorSmallMMmaShare = 0.08;
constexpr int64_t kUnalignedVendorSmallM = 512;
constexpr double kUnalignedVendorGemvDramShare = 0.5;
constexpr double kUnalignedVendorDramShare = 0.23;
constexpr double kUnalignedVendorFixedUs = 8.0;
// Copying an operand into padded rows (kernels/sm90/pad_rows.cuh): its bytes read and its
// padded bytes written, plus a launch of its own. Measured on an H200 as the forced
// configuration's time minus the same tiles on aligned rows: 2.1-3.3 TB/s of read + written
// bytes after 3 us a copy (4096 x 4096 x 4097: 71 us for both operands' 134 MB; 32 x 4096 x
// 14337: 79 us for 237 MB; 1 x 4096 x 4097: 26 us for 67 MB).
constexpr double kOperandCopyLaunchUs = 3.0;
constexpr double kOperandCopyDramShare = 0.6;

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

double peak_tflops(const GemmProblem& problem, const GpuInfo& device) {
  double peak = is_fp8(problem.a_type) ? device.peak_fp8_tflops() : 0;
  if (peak <= 0) peak = device.peak_bf16_tflops();
  if (peak <= 0)
    throw InvalidArgument("device", device.preset.empty() ? device.name : device.preset,
                          "the device has no known matrix-unit rate (sm_count, SM clock and "
                          "capability row are needed to predict a time)");
  return peak;
}

double clock_ghz(const GpuInfo& device) {
  return device.sm_clock_khz > 0 ? device.sm_clock_khz / 1e6 : kDefaultClockGhz;
}

// Matrix-unit, L2 -> SM and shared-memory times of one tile, overlapped: close to the largest
// while the others are small, but when they are near they interfere (they fill and read shared
// memory through the same ports), which a norm models: the 4th for FP8, calibrated on 128x128
// tiles (H100: L2 time 0.76x compute with multicast, 1.0x without, measured 822 against 912
// us; a plain max() called them equal), the 8th for 16-bit inputs (kOverlapNorm16Bit).
double overlap(const GemmProblem& problem, double compute_us, double l2_us, double smem_us) {
  const double norm = is_fp8(problem.a_type) ? kOverlapNormFp8 : kOverlapNorm16Bit;
  return std::pow(std::pow(compute_us, norm) + std::pow(l2_us, norm) + std::pow(smem_us, norm),
                  1.0 / norm);
}

// kSplitSectorL2Factor for an operand whose stored rows are 16 mod 32 bytes apart.
double sector_factor(int64_t leading_dimension, DType type) {
  const int64_t pitch_bytes = leading_dimension * dtype_bytes(type);
  return pitch_bytes % kSectorBytes == kSectorBytes / 2 ? kSplitSectorL2Factor : 1.0;
}

// Share of the matrix-unit time left after the promotion's exposed cycles (1 for 16-bit).
double promotion_share(const GemmProblem& problem, const GemmConfig& config,
                       const GpuInfo& device) {
  if (!is_fp8(problem.a_type)) return 1.0;
  const double flops_per_clock_per_sm =
      peak_tflops(problem, device) * 1e3 / (device.sm_count * clock_ghz(device));
  const double mma_cycles =
      2.0 * config.block_m * config.block_n * config.block_k / flops_per_clock_per_sm;
  const double slabs = double(config.rows_per_consumer()) / 64;
  // 1x128 B scales: each element's row scale times its column's, an FMUL beside the FFMA
  // (kernels/sm90/fp8_promotion.cuh kColumnScaled; priced, not yet fitted).
  const double ffma_cycles = config.num_consumers * slabs * config.block_n / 2.0 *
                             (problem.scaling == Scaling::block_1x128_1x128 ? 2.0 : 1.0);
  // Two temporaries hide all but one promotion per chunk; so do turns (ordered issue), where
  // the other consumer's group runs while one promotes: measured equal at 128x128 (1205 against
  // 1209 TFLOP/s on the H100).
  const bool overlapped = config.promotion_buffers >= 2 || config.ordered_issue;
  const double exposed = overlapped
                             ? (ffma_cycles + kPromotionDrainCycles) / kOverlappedPromotionChunk
                             : ffma_cycles + kPromotionDrainCycles;
  return mma_cycles / (mma_cycles + exposed);
}

// Bytes per microsecond one SM pulls from L2 through its own port.
double sm_l2_rate(const GpuInfo& device) {
  return kL2BytesPerClockPerSm * clock_ghz(device) * 1e3 * kL2Efficiency * device.cost.l2;
}

// Bytes per microsecond.
double dram_rate(const GpuInfo& device) {
  return device.memory_bandwidth_gbps * 1e3 * kDramEfficiency * device.cost.dram;
}

Prediction vendor_prediction(const GemmProblem& problem, const GpuInfo& device) {
  // cuBLASLt's tiling is unknown to us: a roofline of the whole problem, at the rates of its
  // unaligned kernels where TMA could not describe A or B.
  const bool unaligned = !tma_load_incompatibility(problem).empty();
  Prediction p;
  p.mma_efficiency = !unaligned                           ? kVendorMmaShare
                     : problem.m >= kUnalignedVendorSmallM ? kUnalignedVendorMmaShare
                                                           : kUnalignedVendorSmallMMmaShare;
  p.busy_sms = device.sm_count;
  p.last_wave_utilization = 1.0;
  p.compute_us = problem.flops() / (peak_tflops(problem, device) * 1e6 * p.mma_efficiency);
  p.dram_bytes = problem.min_bytes();
  const double rate =
      !unaligned ? dram_rate(device)
                 : device.memory_bandwidth_gbps * 1e3 *
                       (problem.m == 1 ? kUnalignedVendorGemvDramShare : kUnalignedVendorDramShare);
  p.memory_us = rate > 0 ? p.dram_bytes / rate : 0;
  p.fixed_us = unaligned ? kUnalignedVendorFixedUs : kLaunchUs;
  p.time_us = std::max(p.compute_us, p.memory_us) + p.fixed_us;
  p.tflops = problem.flops() / p.time_us / 1e6;
  return p;
}

// DRAM bytes of the whole GEMM under grouped rasterisation. Tiles run in bands of
// `raster_group` tiles along M (along_m; along_n swaps the roles of A and B) that sweep every
// tile of the other dimension:
//   - when A and B together fit the usable L2, each is read once;
//   - the band's own operand (the rows of A of its group) is read once if it stays in L2
//     while the band is swept, else once per wave of the band;
//   - the other operand is swept once per band unless it stays in L2; bands that run in the
//     same wave share that sweep, so at most once per wave.
// D is written once (and C read once when beta != 0).
double dram_bytes(const GemmProblem& problem, const GemmConfig& config, int64_t tiles_m,
                  int64_t tiles_n, int64_t resident, int64_t waves, const GpuInfo& device) {
  const double in_bytes = dtype_bytes(problem.a_type);
  const double a = double(problem.m) * problem.k * in_bytes;
  const double b = double(problem.n) * problem.k * in_bytes;
  const double d = double(problem.m) * problem.d_cols() * dtype_bytes(problem.d_type) *
                   (problem.reads_c ? 2 : 1);
  const double usable_l2 = kL2ReuseShare * double(device.l2_bytes);
  if (a + b <= usable_l2) return a + b + d;

  const bool along_m = config.raster_order == RasterOrder::along_m;
  const int64_t band_tiles = along_m ? tiles_m : tiles_n;
  const int64_t cross_tiles = along_m ? tiles_n : tiles_m;
  const double band_operand = along_m ? a : b;
  const double cross_operand = along_m ? b : a;
  const int64_t group = std::clamp<int64_t>(config.raster_group, 1, band_tiles);
  const int64_t bands = ceil_div(band_tiles, group);
  const double band_bytes = band_operand * double(group) / double(band_tiles);

  const double waves_per_band = double(group * cross_tiles) / double(resident);
  const double band_reads = band_bytes <= usable_l2 ? 1.0 : std::max(1.0, waves_per_band);
  const double cross_reads =
      cross_operand <= usable_l2 ? 1.0 : double(std::min<int64_t>(bands, waves));
  return band_operand * band_reads + cross_operand * cross_reads + d;
}

// How the tiles fall into waves. Occupancy: one CTA per SM. The warp-specialised kernel
// allocates 384 threads x 168 registers (or 256 x 255) = the whole register file, and the
// planner sizes the shared-memory ring to the opt-in limit.
struct Waves {
  int64_t tiles_m = 0, tiles_n = 0;
  int64_t resident = 0;          // CTAs at once: the SMs in whole clusters
  int64_t items = 0;             // CTA work items: tiles x split_k
  int64_t waves = 0;
  int64_t last_wave_items = 0;
};

Waves count_waves(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device) {
  Waves w;
  w.tiles_m = ceil_div(problem.m, config.block_m);
  w.tiles_n = ceil_div(problem.n, config.block_n);
  const int64_t cluster_size = int64_t(config.cluster_m) * config.cluster_n;
  w.resident = std::max(device.sm_count / cluster_size * cluster_size, cluster_size);
  // Split-K multiplies the work items and divides each one's K.
  w.items = w.tiles_m * w.tiles_n * config.split_k;
  w.waves = ceil_div(w.items, w.resident);
  w.last_wave_items = w.items - (w.waves - 1) * w.resident;
  // The n-tail kernel (plan/n_tail.hpp): the last column of tiles runs as narrow tiles on the
  // SMs the main kernel frees, so it adds their share of a tile's work to the waves, not a
  // whole tile each. Counted in whole-tile units, rounded up per wave.
  const KernelFields fields = plan::kernel_fields(problem, config);
  if (config.n_tail_kernel && plan::n_tail_violation(problem, fields).empty()) {
    const plan::NTailSplit split = plan::split_n_tail(problem, fields);
    const double work =
        double(w.tiles_m) * (double(split.main_columns / config.block_n) +
                             double(split.tail_fields.config.block_n) / config.block_n);
    w.waves = std::max<int64_t>(1, static_cast<int64_t>(std::ceil(work / double(w.resident))));
    w.last_wave_items = static_cast<int64_t>(std::ceil(work - double(w.waves - 1) * w.resident));
  }
  return w;
}

// The TMA store's per-box-row cost of one consumer's rows (kEpilogueBoxRowCycles).
double tma_store_box_us(const GemmProblem& problem, const GemmConfig& config,
                        const GpuInfo& device) {
  const int rows_per_consumer = config.rows_per_consumer();
  const int out_bytes = dtype_bytes(problem.d_type);
  // D^T (swap_ab) leaves as boxes of block_n rows, one per 128 bytes of the consumer's rows
  // (kernels/sm90/epilogue.cuh transposed_offset).
  const int box_rows = config.swap_ab ? config.block_n : rows_per_consumer;
  const int boxes = config.swap_ab
                        ? rows_per_consumer * out_bytes / sm90::kSwizzleSpanBytes
                        : sm90::d_boxes(sm90::d_tile_cols(config.block_n,
                                                          problem.epilogue.gated),
                                        out_bytes);
  return kEpilogueBoxRowCycles * box_rows * boxes / (clock_ghz(device) * 1e3);
}

// What one work item costs on one SM, resource by resource.
struct TileTimes {
  int64_t k_steps = 0;        // k-blocks per work item
  double efficiency = 0;      // share of the matrix-unit peak the tile sustains
  double compute_us = 0;      // matrix units
  double a_bytes = 0, b_bytes = 0;   // A and B the tile pulls from L2
  double l2_us = 0;           // L2 -> SM, the SM's port or the whole L2's share
  double smem_us = 0;         // the stage's fill and every slab's wgmma reads
  double store_us = 0;        // the tile's D at its SM's share of the DRAM write rate
  // C read back from DRAM and D written at the SM's DRAM share after the k-loop (the rule
  // beside kStoreTileTurnaroundUs): in series with the next k-loop, or with ping-pong
  // consumers beside the other consumer's.
  bool fp32_accumulation = false;
};

// `k_steps`: the work item's k-blocks where they are not a split's (stream-K's runs).
TileTimes tile_times(const GemmProblem& problem, const GemmConfig& config,
                     const GpuInfo& device, const Waves& w, bool tma_store, int64_t k_steps = 0) {
  TileTimes t;
  const double in_bytes = dtype_bytes(problem.a_type);
  // ---- Matrix units ----
  // The wgmmas compute whole tiles: rows past M and columns past N are zero-filled by TMA but
  // still multiplied, and K is padded to whole stages.
  t.k_steps =
      k_steps > 0 ? k_steps : ceil_div(ceil_div(problem.k, config.block_k), config.split_k);
  const double k_per_item =
      std::min<double>(double(problem.k), double(t.k_steps) * config.block_k);
  const double tile_flops =
      2.0 * config.block_m * config.block_n * double(t.k_steps) * config.block_k;
  const double n_share = config.block_n / (config.block_n + kWgmmaExposedHalfCycles);
  // Ping-pong consumers run their k-loops one at a time (turns), so one warpgroup issues.
  double consumer_share =
      config.num_consumers >= 2 && !config.pingpong ? 1.0 : kSingleConsumerShare;
  if (config.pingpong && config.rows_per_consumer() == 64) consumer_share *= kPingPongOneSlabShare;
  // Each tile drains the wgmma pipeline once (the epilogue waits for the last k-block), about
  // one k-step: short K loses a large share (K = 64 -> half).
  const double k_share = double(t.k_steps) / double(t.k_steps + 1);
  const double sm_flops_per_us = peak_tflops(problem, device) * 1e6 / device.sm_count;
  const double ring_free_efficiency = kSustainedMmaShare * device.cost.mma * n_share *
                                      consumer_share * k_share *
                                      promotion_share(problem, config, device);
  double stage_share = config.num_stages <= 2 ? kTwoStageShare : 1.0;
  if (!a_is_k_major(problem.layout) && !b_is_k_major(problem.layout)) {
    const double k_block_us = tile_flops / double(t.k_steps) /
                              (sm_flops_per_us * ring_free_efficiency);
    stage_share = std::min(stage_share, double(std::max(config.num_stages - 1, 1)) * k_block_us /
                                            kMnMajorStageRoundTripUs);
  }
  t.efficiency = ring_free_efficiency * stage_share;
  t.compute_us = tile_flops / (sm_flops_per_us * t.efficiency);

  // ---- L2 -> SM ----
  // Zero-filled rows cost no L2 traffic; multicast splits the shared operand's reads between
  // the two CTAs of the cluster.
  t.a_bytes = double(std::min<int64_t>(config.block_m, problem.m)) * k_per_item * in_bytes *
              (config.multicast == Multicast::a ? 0.5 : 1.0) *
              sector_factor(problem.lda_or_packed(), problem.a_type);
  t.b_bytes = double(std::min<int64_t>(config.block_n, problem.n)) * k_per_item * in_bytes *
              (config.multicast == Multicast::b ? 0.5 : 1.0) *
              sector_factor(problem.ldb_or_packed(), problem.b_type);
  // Per-SM port limit, and the whole L2's limit shared by the SMs busy in a full wave.
  const int64_t busy_in_wave = std::min<int64_t>(w.items, w.resident);
  const double aggregate_rate = kL2AggregateBytesPerClockPerSm * clock_ghz(device) * 1e3 *
                                device.sm_count / double(std::max<int64_t>(busy_in_wave, 1));
  const double aggregate_us =
      double(t.k_steps) * kL2AggregateKBlockCycles / (clock_ghz(device) * 1e3) +
      (t.a_bytes + t.b_bytes) / aggregate_rate;
  t.l2_us = std::max((t.a_bytes + t.b_bytes) / sm_l2_rate(device), aggregate_us) *
            (config.swap_ab && config.num_consumers == 1 && config.block_m == 64
                 ? kSwappedOneConsumerL2Share
                 : 1.0);

  // ---- Shared memory ----
  const double k_bytes = double(t.k_steps) * config.block_k * in_bytes;
  const double smem_tile_bytes =
      k_bytes * (config.block_m + config.block_n + config.block_m / 64.0 * (64 + config.block_n));
  t.smem_us = smem_tile_bytes / (kSmemBytesPerClock * clock_ghz(device) * 1e3);

  // ---- D's store (split-K: one split of each tile stores it, after the sum) ----
  const int out_bytes = dtype_bytes(problem.d_type);
  // The segments are the tile's rows of the caller's D: the kernel's columns, or with swap_ab
  // and the TMA store its rows (kernels/sm90/epilogue.cuh transposed_offset). Without TMA a
  // swapped tile's threads write 16 bytes of a caller row per warp store; charged as the
  // kernel's rows of block_n elements, as measured when that was the swapped tiles' only path.
  const bool caller_rows_are_kernel_rows = config.swap_ab && tma_store;
  const int64_t row_cells = caller_rows_are_kernel_rows
                                ? std::min<int64_t>(config.block_m, problem.m)
                                : std::min<int64_t>(
                                      sm90::d_tile_cols(config.block_n, problem.epilogue.gated),
                                      problem.d_cols());
  const int64_t row_count = caller_rows_are_kernel_rows
                                ? std::min<int64_t>(config.block_n, problem.n)
                                : std::min<int64_t>(config.block_m, problem.m);
  const double segment_bytes = double(row_cells) * out_bytes;
  const double dram_share_per_sm =
      device.memory_bandwidth_gbps * 1e3 * kDramWriteEfficiency / device.sm_count;
  const double write_rate_per_sm =
      dram_share_per_sm * segment_bytes / (segment_bytes + kWriteSegmentHalfRateBytes);
  t.fp32_accumulation = plan::accumulates_fp32_from_dram(problem) && config.split_k == 1;
  if (t.fp32_accumulation) {
    t.store_us = double(row_count) * segment_bytes * 2 / dram_share_per_sm;
  } else if (config.split_k == 1 && write_rate_per_sm > 0) {
    t.store_us = kStoreTileTurnaroundUs +
                 double(row_count) * segment_bytes * (problem.reads_c ? 2 : 1) /
                     write_rate_per_sm;
    // A lone consumer's TMA boxes: fixed_costs() charges them for two consumers only (traces
    // of long-K 64-row tiles did not show them), but a short-K 64-row tile waits them out.
    if (config.num_consumers == 1 && tma_store)
      t.store_us += tma_store_box_us(problem, config, device);
  }
  return t;
}

// Launch, pipeline fill, every tile's epilogue and split-K's sum.
double fixed_costs(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device,
                   int64_t waves, bool tma_store) {
  // Pipeline fill: latency plus the first stage's bytes. The epilogue of every tile writes
  // block_m x block_n outputs (and reads C) through the SM's L2 port while the tensor cores of
  // its consumers idle (the cooperative kernel has no epilogue/mainloop overlap).
  const double fill_us = kFirstLoadLatencyUs + double(config.block_m + config.block_n) *
                                                   config.block_k * dtype_bytes(problem.a_type) /
                                                   sm_l2_rate(device);
  // An fp32 accumulation's store is the wave's (tile_times), its boxes fitted with it.
  const bool fp32_accumulation =
      plan::accumulates_fp32_from_dram(problem) && config.split_k == 1;
  double epilogue_us = fp32_accumulation
                           ? 0.0
                           : double(config.block_m) *
                                 sm90::d_tile_cols(config.block_n, problem.epilogue.gated) *
                                 dtype_bytes(problem.d_type) * (problem.reads_c ? 2 : 1) /
                                 sm_l2_rate(device);
  // The fused epilogue's arithmetic, with the tensor cores idle as for the store.
  // FP8 output: its amax and scale priced as one more scale per element (not yet fitted).
  if (const Epilogue e = kernel_epilogue(problem); !e.empty() || problem.d_type == DType::e4m3) {
    const double per_element_ns = (e.bias ? kFusedVectorNs : 0.0) +
                                  kFusedScaleNs * ((e.row_scale ? 1 : 0) + (e.col_scale ? 1 : 0) +
                                                   (problem.d_type == DType::e4m3 ? 1 : 0)) +
                                  fused_activation_ns(e.activation, problem.d_type);
    epilogue_us += double(config.block_m) * config.block_n * per_element_ns * 1e-3 *
                   (2.0 / config.num_consumers);
  }
  // The box term is the TMA store's (not staged rows TMA cannot store, nor swap_ab's D^T).
  if (config.num_consumers == 2 && tma_store && !fp32_accumulation) {
    epilogue_us += tma_store_box_us(problem, config, device);
    if (!config.swap_ab &&
        sm90::d_tail_box_cols(sm90::d_tile_cols(config.block_n, problem.epilogue.gated),
                              dtype_bytes(problem.d_type)) > 0)
      epilogue_us += kEpilogueTailBoxUs;
  }
  if (config.d_chunk_boxes > 0)
    epilogue_us += double(sm90::d_main_boxes(config.block_n, dtype_bytes(problem.d_type)) /
                              config.d_chunk_boxes -
                          1) *
                   (kDChunkTurnaroundUs + (problem.reads_c ? kDChunkCLoadUs : 0.0));
  // Ping-pong consumers store a tile beside the other's k-loop: only the last one is exposed.
  double fixed_us = kLaunchUs + (config.persistent ? fill_us : double(waves) * fill_us) +
                    (config.pingpong ? 1.0 : double(waves)) * epilogue_us;
  // Split-K: the other splits' SMs write their fp32 tiles and the last one reads the split_k - 1
  // back, through the SM's L2 port (the partial tiles are small enough to stay in L2: splits
  // are only offered where the tiles leave SMs idle); counted as split_k tiles on one port.
  if (config.split_k > 1)
    fixed_us += kSplitKReduceLatencyUs +
                double(config.split_k) * config.block_m * config.block_n * 4.0 /
                    sm_l2_rate(device);
  return fixed_us;
}

// Stream-K (kernels/sm90/stream_k.cuh): the tiles that do not fill whole waves shared out as
// equal runs of k-blocks, one per SM.
struct StreamKShape {
  int64_t shared_tiles = 0;     // 0: none (no stream_k, or whole waves)
  int64_t whole_waves = 0;      // waves of whole tiles before the runs
  int64_t run_k_blocks = 0;     // the longest run
  double pieces_per_tile = 1;   // the shared tiles' mean piece count
};

StreamKShape stream_k_shape(const GemmProblem& problem, const GemmConfig& config, const Waves& w) {
  StreamKShape s;
  if (!config.stream_k) return s;
  const int tiles = int(w.items), slots = int(w.resident);
  const int k_blocks = int(ceil_div(problem.k, config.block_k));
  s.shared_tiles = sm90::stream_k_tiles(tiles, slots);
  if (s.shared_tiles == 0) return s;
  s.whole_waves = (tiles - s.shared_tiles) / slots;
  s.run_k_blocks = ceil_div(s.shared_tiles * k_blocks, slots);
  s.pieces_per_tile = double(sm90::stream_k_work_items(tiles, slots, k_blocks) -
                             (tiles - s.shared_tiles)) /
                      double(s.shared_tiles);
  return s;
}

// A run's k-blocks, each CTA at its own k (not a wave's together), ran 1.16x a wave's in tile
// traces of 142 x 10240 x 8192 128x144 swapped (735 against 631 cycles a k-block, H200).
constexpr double kStreamKRunSlowdown = 1.16;

// A run's cut tiles: it stores one piece's fp32 sums and the last piece of another reads the
// others' back (split_k_reduce.cuh), through the SM's L2 port, after the split-K reduction's
// latency chain (kSplitKReduceLatencyUs; not yet fitted to stream-K).
double stream_k_sum_us(const GemmConfig& config, const GpuInfo& device, const StreamKShape& sk) {
  return kSplitKReduceLatencyUs +
         sk.pieces_per_tile * config.block_m * config.block_n * 4.0 / sm_l2_rate(device);
}

// Grouped GEMM (grouped.hpp): all groups' tiles form one wave plan, so a dense problem of the
// groups' rows gives the tiles, waves, matrix-unit and L2 times:
//   contiguous: the rows of A (every group's run, padded to 128, is whole tiles);
//   masked: each group's valid rows padded to tiles. They are not known on the host: a group
//     has between expected_m and max_m rows (the problem's m) more or less evenly, so the
//     prediction is the mean of the two ends. A tile height that keeps a group's tile count
//     from jumping between them wins (planned for expected_m alone, 64-row tiles were chosen
//     for 64 expected rows, and the groups drawn with 65-83 rows took two tiles each: 65% of
//     a copy of the bytes, H200).
// DRAM differs from the dense problem: each group reads its own B (N x K), where the dense
// problem reads one. The tiles of a group run close together (consecutive items of the
// scheduler), so each group's B is counted once; the call then takes at least its DRAM bytes'
// time plus the fixed costs (masked decode rows are B-bound). predict_as_dense is that dense
// problem, `rows` x N x `k`, plus `extra_b_bytes` of B it does not read.
Prediction predict_as_dense(const GemmProblem& problem, const GemmConfig& config,
                            const GpuInfo& device, int64_t rows, int64_t k,
                            double extra_b_bytes) {
  GemmProblem dense = problem;
  dense.grouping = Grouping::none;
  dense.num_groups = 1;
  dense.expected_m = 0;
  dense.m = rows;
  dense.k = k;
  Prediction p = predict(dense, config, device);
  p.dram_bytes += extra_b_bytes;
  const double rate = dram_rate(device);
  p.memory_us = rate > 0 ? p.dram_bytes / rate : 0;
  p.time_us = std::max(p.time_us, p.memory_us + p.fixed_us);
  return p;
}

Prediction predict_grouped_rows(const GemmProblem& problem, const GemmConfig& config,
                                const GpuInfo& device, int64_t dense_rows,
                                double b_reads_per_group) {
  return predict_as_dense(problem, config, device, dense_rows, problem.k,
                          (double(problem.num_groups) * b_reads_per_group - 1) *
                              double(problem.n) * double(problem.k) *
                              dtype_bytes(problem.b_type));
}

// Groups along K (weight gradients of experts): each group's tiles are a dense m x n product
// over its run of tokens, all groups' tiles one wave plan: the dense problem of num_groups x m
// rows over the expected run, rounded up to whole k-blocks (a run's last k-block is computed
// whole). DRAM: every token of A and B once (the dense problem counts one run of B), and every
// group's D (and C).
Prediction predict_k_grouped(const GemmProblem& problem, const GemmConfig& config,
                             const GpuInfo& device) {
  const int64_t run = ceil_div(problem.expected_group_k(), config.block_k) * config.block_k;
  return predict_as_dense(problem, config, device, problem.stored_rows(), run,
                          double(problem.n) * double(problem.k - run) *
                              dtype_bytes(problem.b_type));
}

Prediction predict_grouped(const GemmProblem& problem, const GemmConfig& config,
                           const GpuInfo& device) {
  Prediction p;
  if (problem.grouping == Grouping::k_contiguous) {
    p = predict_k_grouped(problem, config, device);
  } else if (problem.grouping == Grouping::contiguous) {
    p = predict_grouped_rows(problem, config, device, problem.m, 1.0);
  } else {
    // Masked decode groups have one or two tiles of rows; each reads the group's B from DRAM
    // (measured on the H200, 16 groups of 45-83 rows, N = 4096, K = 7168: 64-row tiles, two
    // for most groups, 364 us; 128-row tiles, one per group, 259 us: the second tile's B did
    // not come from L2).
    auto at_rows = [&](int64_t rows_per_group) {
      const int64_t tiles = ceil_div(rows_per_group, config.block_m);
      return predict_grouped_rows(problem, config, device,
                                  tiles * config.block_m * problem.num_groups, double(tiles));
    };
    p = at_rows(problem.expected_group_rows());
    p.time_us = (p.time_us + at_rows(problem.m).time_us) / 2;
  }
  p.tflops = problem.flops() / p.time_us / 1e6;
  return p;
}

// The kernels alone, on the problem they read (plan::kernel_problem).
Prediction predict_kernels(const GemmProblem& problem, const GemmConfig& config,
                           const GpuInfo& device) {
  if (problem.grouping != Grouping::none && config.instruction == Instruction::wgmma)
    return predict_grouped(problem, config, device);
  for (auto [name, value] : {std::pair{"config.block_m", config.block_m},
                             {"config.block_n", config.block_n},
                             {"config.block_k", config.block_k},
                             {"config.num_consumers", config.num_consumers},
                             {"config.cluster_m", config.cluster_m},
                             {"config.cluster_n", config.cluster_n},
                             {"config.split_k", config.split_k}})
    if (value < 1) throw InvalidArgument(name, std::to_string(value), "must be >= 1");
  if (device.sm_count < 1)
    throw InvalidArgument("device.sm_count", std::to_string(device.sm_count), "must be >= 1");
  if (config.instruction == Instruction::mma) return plan::predict_decode(problem, config, device);

  Prediction p;
  const Waves w = count_waves(problem, config, device);
  p.num_tiles = w.items;
  p.waves = w.waves;
  p.busy_sms = int(std::min<int64_t>(w.last_wave_items, device.sm_count));
  p.last_wave_utilization = double(p.busy_sms) / device.sm_count;

  const bool tma_store = plan::kernel_fields(problem, config).store_path == StorePath::tma;
  const TileTimes t = tile_times(problem, config, device, w, tma_store);
  p.mma_efficiency = t.efficiency;
  p.l2_bytes = (t.a_bytes + t.b_bytes) * double(w.items);
  p.dram_bytes = dram_bytes(problem, config, w.tiles_m, w.tiles_n, w.resident, w.waves, device);
  const double rate = dram_rate(device);
  p.memory_us = rate > 0 ? p.dram_bytes / rate : 0;

  // Per wave every busy SM computes one item, so a wave lasts as long as one item on one SM,
  // limited by the slowest resource (the producer warpgroup overlaps loads with the math), by
  // the k-block latency chain, or by the wave's share of the DRAM bytes (`items` tiles' worth).
  auto wave_us = [&](const TileTimes& t, int64_t items) {
    // Applied where it was measured: the other operand fills at most half its tile (M <= 32 in
    // 64-row tiles). At M = 64 it moved 64 x 2112 x 7168 from split 2 (15.2 us) to split 4
    // in two waves (17.6 us), whose wave cost the model underrates. A swapped kernel (swap_ab:
    // the call's M <= 32 rows as its N, in one tile column) streams the call's B the same way.
    const bool one_pass_operand =
        (w.tiles_m == 1 && 2 * problem.m <= config.block_m) ||
        (w.tiles_n == 1 &&
         (2 * problem.n <= config.block_n || (config.swap_ab && problem.n <= plan::kSwapAbMaxM)));
    // The first pass is the pipeline fill (fixed costs).
    const double ring_us =
        one_pass_operand
            ? std::max(0.0, double(t.k_steps - config.num_stages) / config.num_stages) * kDramRingPassUs
            : 0;
    const double latency_us = std::max(double(t.k_steps) * kKBlockLatencyUs, ring_us);
    const double on_sm = std::max(overlap(problem, t.compute_us, t.l2_us, t.smem_us), latency_us);
    const double wave_dram_us = p.memory_us * double(items) / double(w.items);
    if (t.fp32_accumulation && !config.pingpong)
      return std::max(on_sm + t.store_us, wave_dram_us);
    return std::max({on_sm, t.store_us, wave_dram_us});
  };
  const StreamKShape sk = stream_k_shape(problem, config, w);
  if (sk.shared_tiles > 0) {
    // Whole waves, then every SM's run over the shared tiles (a share of their DRAM bytes).
    const TileTimes run = tile_times(problem, config, device, w, tma_store, sk.run_k_blocks);
    const int64_t waves = sk.whole_waves + 1;
    const double waves_us = double(sk.whole_waves) * wave_us(t, w.resident) +
                            kStreamKRunSlowdown * wave_us(run, sk.shared_tiles);
    p.num_tiles = w.items;
    p.waves = waves;
    p.busy_sms = int(std::min<int64_t>(w.resident, device.sm_count));
    p.last_wave_utilization = double(p.busy_sms) / device.sm_count;
    p.compute_us = double(sk.whole_waves) * t.compute_us + run.compute_us;
    p.l2_us = double(sk.whole_waves) * t.l2_us + run.l2_us;
    p.store_us = double(waves) * t.store_us;
    // The epilogues on an SM: one a whole wave, and the shared tiles' share of a run.
    const int64_t stored = sk.whole_waves + ceil_div(sk.shared_tiles, w.resident);
    p.fixed_us = (fixed_costs(problem, config, device, stored, tma_store) +
                  stream_k_sum_us(config, device, sk)) *
                 device.cost.fixed;
    p.time_us = waves_us + p.fixed_us;
    p.tflops = problem.flops() / p.time_us / 1e6;
    return p;
  }
  const double waves_us =
      double(w.waves - 1) * wave_us(t, w.resident) + wave_us(t, w.last_wave_items);
  p.compute_us = double(w.waves) * t.compute_us;
  p.l2_us = double(w.waves) * t.l2_us;
  p.store_us = double(w.waves) * t.store_us;
  p.fixed_us = fixed_costs(problem, config, device, w.waves, tma_store) * device.cost.fixed;
  p.time_us = waves_us + p.fixed_us;
  p.tflops = problem.flops() / p.time_us / 1e6;
  return p;
}

}  // namespace

namespace plan {

void add_operand_copies(Prediction& p, const GemmProblem& call, const GpuInfo& device) {
  const double rate = device.memory_bandwidth_gbps * 1e3 * kOperandCopyDramShare;
  for (const OperandCopy& copy : {operand_copy_a(call), operand_copy_b(call)})
    if (copy.active() && rate > 0)
      p.operand_copy_us +=
          kOperandCopyLaunchUs +
          double(copy.rows * (copy.row_elements + copy.padded_ld) * copy.element_bytes) / rate;
  p.time_us += p.operand_copy_us;
  p.tflops = call.flops() / p.time_us / 1e6;
}

}  // namespace plan

Prediction predict(const GemmProblem& call, const GemmConfig& config, const GpuInfo& device) {
  validate(call);
  if (config.instruction == Instruction::vendor) return vendor_prediction(call, device);
  Prediction p = predict_kernels(plan::kernel_problem(call, config), config, device);
  plan::add_operand_copies(p, call, device);
  return p;
}

}  // namespace autogemm
