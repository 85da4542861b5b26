// plan_gemm: problem + device -> ranked configurations of the sm_90a kernel family, or the
// vendor library with the reason why.
//
// Search space (design.md "one kernel family, many configurations"):
//   block_m       64, 128, 256
//   block_n       multiples of 16 up to 256, and 8 for N <= 8 (a narrower wgmma)
//   block_k       128 bytes of input (one swizzle atom): 64 bf16/fp16, 128 fp8
//   num_consumers 1 or 2
//   num_stages    the deepest ring that fits the opt-in shared memory, 2..8 (deeper buys
//                 nothing once the DRAM latency is covered; DeepGEMM caps at a similar depth)
//   cluster       1x1, 2x1 multicasting B, 1x2 multicasting A
//   split_k       1, or 2..8 where the output tiles leave SMs idle
//   raster        group 8, 16 or 1, along M or along N
//   persistent    yes, and no
//   swap_ab       M <= 32 also on D^T = B^T A^T: one tile column of all M rows, block_m
//                 64 or 128 (plan/swap_ab.hpp)
// Tile-level rules are checked once per (block_m, block_n, num_consumers) and the schedule
// rules once per cluster shape, so each rejection is listed once with its reason.
#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <array>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "kernels/sm90/fp8_scales.cuh"
#include "kernels/sm90/gemm_layout.cuh"
#include "kernels/sm90/stream_k.cuh"
#include "plan/rules.hpp"
#include "plan/gemm_search.hpp"
#include "plan/kernel_spec.hpp"
#include "plan/n_tail.hpp"
#include "plan/operand_copy.hpp"
#include "plan/swap_ab.hpp"

namespace autogemm {

namespace plan {

namespace {

constexpr int kMaxStages = 8;

struct ClusterChoice {
  int cluster_m, cluster_n;
  Multicast multicast;
};
// Single CTAs first: on equal predicted time the simpler launch wins.
constexpr std::array kClusterChoices = {ClusterChoice{1, 1, Multicast::none},
                                        ClusterChoice{2, 1, Multicast::b},
                                        ClusterChoice{1, 2, Multicast::a}};

struct RasterChoice {
  int group;
  RasterOrder order;
};
// Group 8 along M first (DeepGEMM's and the TIRx scheduler's default) for equal times.
constexpr std::array kRasterChoices = {
    RasterChoice{8, RasterOrder::along_m},  RasterChoice{8, RasterOrder::along_n},
    RasterChoice{16, RasterOrder::along_m}, RasterChoice{16, RasterOrder::along_n},
    RasterChoice{1, RasterOrder::along_m},  RasterChoice{1, RasterOrder::along_n}};

// Tile widths: steps of 16 for the call's columns (N <= 8 rounded up to 8: a narrower
// instruction, less waste), steps of 8, wgmma's own, for a swapped tile whose width covers the
// call's rows: few tiles span them, so each step of padding is paid by every tile. cuBLASLt
// covers such rows with 8-row steps too (128x216 on 852 rows, 128x232 on 918, 128x200 on 200:
// ncu on an H200).
std::vector<int> block_n_choices(int64_t n, bool swapped) {
  std::vector<int> out;
  if (n <= 8) out.push_back(8);
  for (int bn = 16; bn <= 256; bn += swapped ? 8 : 16) out.push_back(bn);
  return out;
}

// A swapped problem's N is the call's few rows of A: one tile holds them all, so each row of
// the call's B is read by one CTA (the decode family's rule: at M = 16, 8-row tiles that read
// B twice took 52-58 us where 16-row tiles took 38-39, H200). Its tiles are 64 or 128 rows of
// the call's N: 256-row ones were the slowest swapped tile of each of six decode rows forced
// on an H200 (32 x 7168 x 2048 sk4 0.84 of cuBLASLt, 32 x 24576 x 1536 0.95 against 0.98-1.06
// for 64 and 128 rows), as few tiles leave SMs idle or need split-K.
// The width is the call's rows rounded up to wgmma's N step of 8; an N-major B (the call's A
// stored K x M) loads whole 64-column slabs, so there the next multiple of 64.
int one_tile_block_n(const GemmProblem& problem) {
  if (!b_is_k_major(problem.layout)) return int((problem.n + 63) / 64 * 64);
  return int((problem.n + 7) / 8 * 8);
}

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

const char* store_path_text(StorePath path, bool swap_ab) {
  switch (path) {
    case StorePath::tma: return swap_ab ? "D^T staged as the caller's rows, TMA store" : "TMA store";
    case StorePath::staged: return "D staged and stored by the threads in 16-byte chunks";
    case StorePath::threads: break;
  }
  return swap_ab ? "D stored transposed by the threads" : "stores by the threads";
}

std::string kernel_path_reason(const GemmProblem& problem, const GemmConfig& best,
                               const GpuInfo& device) {
  if (best.instruction == Instruction::mma)
    return fmt::format(
        "{} on {}: decode family: B streamed once from DRAM {} into mma.sync m16n8k{} ({}) "
        "with A's rows as the 8-wide side, {} rows of B per CTA{}",
        arch_label(device), device_label(device),
        problem.weight_format
            ? fmt::format("as packed {} weights into registers ({} step{} ahead), dequantised "
                          "there to bf16 pairs",
                          to_string(*problem.weight_format), best.num_stages,
                          best.num_stages > 1 ? "s" : "")
        : best.num_stages > 1
            ? fmt::format("through a {}-stage cp.async ring per warp (whole 128-byte lines, "
                          "ldmatrix)",
                          best.num_stages)
            : std::string("straight into registers"),
        is_fp8(problem.a_type) ? 32 : 16, to_string(problem.a_type), best.block_n,
        best.split_k > 1
            ? fmt::format(", K split over {} CTAs summed in a fixed order", best.split_k)
            : std::string());
  const GemmProblem kernel = kernel_problem(problem, best);
  return fmt::format(
      "{} on {}: {}TMA loads + wgmma m64n{}k{} ({}) + {}, {} consumer warpgroup{}{} and a "
      "producer, {}",
      arch_label(device), device_label(device),
      best.swap_ab ? fmt::format("D^T = B^T A^T (the {} rows of A along wgmma's N): ", problem.m)
                   : std::string(),
      best.block_n, is_fp8(problem.a_type) ? 32 : 16, to_string(problem.a_type),
      std::string(store_path_text(kernel_fields(kernel, best).store_path, best.swap_ab)) +
          (best.d_chunk_boxes > 0
               ? fmt::format(" of {} columns at a time (D staged in chunks: a deeper ring)",
                             best.d_chunk_boxes * sm90::d_main_box_cols(dtype_bytes(problem.d_type)))
               : std::string()),
      best.num_consumers, best.num_consumers > 1 ? "s" : "",
      best.pingpong ? " taking whole tiles in turn (one's epilogue beside the other's k-loop)"
                    : "",
      best.persistent ? "persistent over the SMs" : "one CTA per tile");
}

Plan vendor_plan(const GemmProblem& problem, const GpuInfo& device, std::string reason) {
  Plan plan;
  plan.problem = problem;
  plan.device = device;
  const GemmConfig config = vendor_config();
  plan.candidates.push_back({config, predict(problem, config, device)});
  plan.path_reason = std::move(reason);
  plan.spec = make_spec(problem, config, device, plan.path_reason);
  return plan;
}

}  // namespace

std::vector<int> split_k_choices(const GemmProblem& problem, int block_m, int block_n, int block_k,
                                 const GpuInfo& device) {
  // Split-K only where the output tiles alone leave SMs idle (decode shapes with small N), and
  // only while each split keeps at least 4 k-blocks to pipeline.
  std::vector<int> choices{1};
  if (problem.grouping != Grouping::none) return choices;   // grouped_violation: no split-K
  const int64_t tiles = ((problem.m + block_m - 1) / block_m) * ((problem.n + block_n - 1) / block_n);
  const int64_t k_blocks = (problem.k + block_k - 1) / block_k;
  for (int split : {2, 3, 4, 6, 8})
    if (tiles * 2 <= device.sm_count && tiles * split <= 2 * int64_t(device.sm_count) &&
        k_blocks >= 4 * split)
      choices.push_back(split);
  return choices;
}

// FP8 may promote from two temporaries (overlapping the promotion with the next k-block's
// wgmmas) where the registers allow; 16-bit inputs accumulate in place.
std::vector<int> promotion_buffer_choices(const GemmProblem& problem) {
  if (problem.a_type == DType::bf16 || problem.a_type == DType::fp16) return {1};
  return {1, 2};
}

std::vector<bool> ordered_issue_choices(const GemmProblem& problem, int block_m, int block_n,
                                        int num_consumers, int promotion_buffers) {
  // Measured on the H100: with two temporaries the turns only serialise the
  // consumers (1047 against 1209 TFLOP/s), so ordered issue goes with one; tiles whose B scale
  // split varies per tile (112, 160, 192) lost 12-20% to the per-column selects; and with one
  // m64 slab per consumer it fell behind two temporaries once the A scales were transposed
  // (128x128: 0.86 against 0.96 of cuBLASLt at 4096x2112x7168). It stays for 256-row tiles,
  // which only fit with it, and for K of at least 32 k-blocks: with K = 512-2048 they ran 3-4%
  // behind 128x128 with two temporaries, with K = 4096-16384 2-9% ahead (the model, which
  // charges neither tile's per-tile costs by K, calls them even).
  // Nor for 256x64: its n64 wgmmas read all of A from shared memory for half the work of n128
  // (the port's ceiling is ~62%; it ran 19% behind); at 4096x2112x7168 without clusters it
  // took 122.3 us against 112.4 for 128x128 pb2.
  constexpr int64_t kOrderedIssueMinKBlocks = 32;
  constexpr int kOrderedIssueMinBlockN = 128;
  if (!is_fp8(problem.a_type) || num_consumers != 2 || promotion_buffers != 1 ||
      block_m / num_consumers < 128 || block_n < kOrderedIssueMinBlockN ||
      sm90::b_scale_split_varies(block_n) ||
      (problem.k + sm90::kScaleBlock - 1) / sm90::kScaleBlock < kOrderedIssueMinKBlocks)
    return {false};
  return {false, true};
}

// Ping-pong consumers are offered where a tile's epilogue would otherwise hold up the next
// k-loop: weight gradients' fp32 accumulation from DRAM, and fused epilogues' arithmetic past
// the memory-bound rows (M > 256, where reading B sets the time). Fused ones at M <= 256 were
// not measured against it. Plain rows at M > 256 were, and lost: offered there, the planner
// moved 15 rows of the public, random and short-K suites (K <= 512, 128x256 -> 64x256 pp, the
// model predicting 2-20% gains) and 13 ran slower, +0.3..+35% (4096 x 32768 x 512 214 -> 238
// us, 14210 x 760 x 24 17.7 -> 23.8; H200, two alternated rounds).
// Experts' weight gradients only from 512 tokens an expert: with 64-256 (1-4 k-blocks) a tile
// is its fp32 C read and D write, which one warpgroup moves at half the two's rate, and there
// is no k-loop to hide it beside. Measured on an H200 (wgrad-moe.csv, us, pp pick against
// 128x128x64 s5 c2): 7168 x 2048 x 64-token experts 1233 / 1010, 2048 x 768 x 64 172 / 119,
// 1536 x 2048 x 256 271 / 246; from 512 tokens pp wins, 4096 x 7168 x 512 2847 / 3284.
// A/B of the rule (H200): wgrad-moe 1.240 -> 1.277. Its 256-token rows now take 128x192 s3,
// 3-5% slower than pp there, though 128x128 s5 measured 246: the cost model ranks them wrongly.
constexpr int64_t kPingPongMinExpertTokens = 512;
std::vector<bool> pingpong_choices(const GemmProblem& problem, int num_consumers, bool swap_ab) {
  constexpr int64_t kMemoryBoundRows = 256;
  const bool fused_compute_bound =
      !kernel_epilogue(problem).empty() && problem.m > kMemoryBoundRows;
  if (dtype_bytes(problem.a_type) != 2 || num_consumers != 2 || swap_ab ||
      problem.d_type == DType::e4m3 ||
      (!accumulates_fp32_from_dram(problem) && !fused_compute_bound) ||
      (problem.grouping != Grouping::none && problem.grouping != Grouping::k_contiguous) ||
      (problem.grouping == Grouping::k_contiguous &&
       problem.expected_group_k() < kPingPongMinExpertTokens))
    return {false};
  return {false, true};
}

bool stream_k_offered(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device) {
  // One column of tiles (the call's rows all in one tile): each tile streams its own part of B.
  if (!config.swap_ab || dtype_bytes(problem.a_type) != 2 || config.num_consumers != 1 ||
      problem.n > config.block_n)
    return false;
  const int64_t tiles = (problem.m + config.block_m - 1) / config.block_m;
  const int64_t k_blocks = (problem.k + config.block_k - 1) / config.block_k;
  return k_blocks >= kStreamKMinKBlocks && tiles > device.sm_count && tiles % device.sm_count != 0;
}

bool multicast_offered(const GemmProblem& problem, bool swap_ab) {
  // Swapped operands (swap_ab), any rows: the pair shares the call's few rows of A (the
  // kernel's B) or a stream of the call's B columns, neither short of L2 bandwidth, and only
  // adds its lockstep. Measured on an H200, the planner's swapped picks against the same tiles
  // alone, us: 400 x 12288 x 4096 64x200 s6 c1 69.9 / 57.8, 200 x 50000 x 512 64x200 s6 c1
  // 27.5 / 25.1, 852 x 4096 x 7168 128x216 s3 78.1 / 74.5, 918 x 4096 x 7168 128x232 s3 80.2 /
  // 76.9, 700 x 4096 x 4096 128x176 s4 36.1 / 34.8, 2200 x 3000 x 6000 128x200 s4 107.4 /
  // 106.0, 1153 x 7168 x 2048 128x168 s4 49.2 / 48.6, 600 x 8192 x 8192 128x152 s5 109.3 / 108.4.
  // One loss: 387 x 6512 x 7768 256x80 s4 97.8 with cl2x1/b, 111.7 alone (the cost model
  // predicts 76.0 / 77.9, so it cannot pick between them either).
  if (swap_ab) return false;
  // Measured on the H100, block-scaled FP8 tiles against the same tiles
  // without their multicast cluster: without it 128x128 pb2 ran 3-8% faster at K = 2048-7168
  // and level at K = 1536, 256x128 oi 0-2% faster at K = 4096-16384; only at K = 512 (4
  // k-blocks) did the cluster win (143.4 against 147.2 us). A multicast stage is freed only when
  // both CTAs' consumers have released it, and a block-scaled consumer's k-block time varies
  // with its promotion, so the pair runs at the slower one's pace. The cost model
  // credits multicast's halved L2 traffic and does not know this coupling, so the planner
  // leaves multicast out where it measured no better.
  constexpr int64_t kFp8MulticastMaxKBlocks = 11;
  // Decode sizes (M <= 128), any input type: a k-block's time there follows the bytes each SM
  // receives with every SM pulling (~64 B/clk per SM), and multicast delivers the shared
  // operand into both CTAs' shared memory all the same; the pair only adds its lockstep.
  // Measured on the H100: FP8 64x32 with A multicast 13-20% slower on every decode row;
  // BF16 64 x 2112 x 7168 64x16x128 20.9 us with cl1x2/a against 17.5 alone,
  // 128 x 2112 x 7168 64x32x128 cl1x2/a 23.3 us against 20.0 for 128x64 sk4.
  constexpr int64_t kMulticastMinM = 129;
  if (problem.m < kMulticastMinM) return false;
  if (problem.scaling != Scaling::block_1x128_128x128) return true;
  return (problem.k + sm90::kScaleBlock - 1) / sm90::kScaleBlock <= kFp8MulticastMaxKBlocks;
}

std::string vendor_reason(const GemmProblem& problem, const GpuInfo& device) {
  if (device.cc != ComputeCapability{9, 0}) {
    if (device.cc.major < 9 && !device.caps.tma)
      return fmt::format("{} is {}: no wgmma/TMA (they need sm_90a); cuBLASLt",
                         device_label(device), arch_label(device));
    return fmt::format(
        "{} is {}: wgmma exists only on sm_90a and autogemm has no {} kernel yet; cuBLASLt",
        device_label(device), arch_label(device), arch_label(device));
  }
  const DType in = problem.a_type;
  if (in != DType::bf16 && in != DType::fp16 && !is_fp8(in))
    return fmt::format("a_type = {}: autogemm's wgmma kernel takes bf16, fp16 or fp8; cuBLASLt",
                       to_string(in));
  // Only A's and B's strides, and only where no copy into padded rows can help
  // (plan/operand_copy.hpp): D's and C's are written and read by the threads where TMA cannot
  // (rules.cpp kernel_fields).
  if (auto why = tma_load_incompatibility(kernel_problem(problem)); !why.empty())
    return fmt::format("{}; cuBLASLt", why);
  return {};
}

std::vector<GemmConfig> decode_configs(const GemmProblem& problem, const GpuInfo& device) {
  std::vector<GemmConfig> configs;
  const int64_t max_m = problem.weight_format ? kWeightOnlyMaxM : kDecodeMaxM;
  // Grouped: the masked layout of weight-only B (a MoE decode step), tiles sized to a group's
  // expected rows.
  const bool masked = problem.grouping == Grouping::masked && problem.weight_format;
  if (problem.m > max_m || (problem.grouping != Grouping::none && !masked)) return configs;
  const int64_t rows = masked ? problem.expected_group_rows() : problem.m;
  const int chunk = decode_chunk_elements(problem);
  const int step_multiple =
      problem.scaling == Scaling::block_1x128_128x128 ? sm90::kScaleBlock : chunk;
  for (int block_m : {8, 16, 32}) {
    // One row tile: the narrowest block_m that holds all of M, so each B row is read by one
    // CTA. Measured on the H200 at M = 16: 8-row tiles (B read twice, the second time from L2)
    // took 52-58 us where 16-row tiles took 38-39 on the 117 MB rows.
    if (block_m > 8 && block_m / 2 >= rows) continue;
    if (block_m < rows && block_m < 32) continue;
    for (int block_n : {64, 32, 16}) {
      const auto add_splits = [&](GemmConfig c) {
        const int64_t steps = (problem.k + c.block_k - 1) / c.block_k;
        for (int split : {1, 2, 3, 4, 6, 8, 12, 16, 24, 32}) {
          if (split > steps) break;
          // Weight-only: past 16 splits the reduction's loads crowd out the B slots (spills
          // at 32 under three CTAs an SM; plan/decode_cost.cpp).
          if (problem.weight_format && split > 16) break;
          c.split_k = split;
          configs.push_back(c);
        }
      };
      // Registers: one, two or four... chunks: measured on the H200, 160 and 96 (five and
      // three chunks) ran 3-25% behind 128 on every decode row.
      for (int block_k = step_multiple;; block_k *= 2) {
        GemmConfig c = GemmConfig::parse(fmt::format("mma {}x{}x{}", block_m, block_n, block_k));
        if (decode_step_vectors(problem, c) > decode_max_step_vectors(problem)) break;
        add_splits(c);
        // Weight-only: also 2..4 steps of B in flight (num_stages), as many as the registers
        // hold.
        for (int ahead = 2; problem.weight_format && ahead <= kWeightMaxStepsAhead; ++ahead) {
          c.num_stages = ahead;
          if (decode_step_vectors(problem, c) > decode_max_step_vectors(problem)) break;
          add_splits(c);
        }
      }
      // Warp rings: steps of 128 to 512 bytes of a row (the range measured), 3 to 8 stages, as
      // many as fit. Two stages (one step ahead) ran 7-15% behind three or four on every BF16
      // decode row (H200, 2026-11-25).
      for (int row_bytes = 128; row_bytes <= 512 && !problem.weight_format; row_bytes *= 2) {
        const int block_k = row_bytes / dtype_bytes(problem.a_type);
        if (block_k % step_multiple != 0) continue;
        for (int stages : {3, 4, 6, 8}) {
          GemmConfig c = GemmConfig::parse(
              fmt::format("mma {}x{}x{} s{}", block_m, block_n, block_k, stages));
          if (!decode_ring_fits(problem, c, device)) break;
          add_splits(c);
        }
      }
    }
  }
  return configs;
}

GemmConfig vendor_config() {
  GemmConfig c;
  c.instruction = Instruction::vendor;
  c.block_m = c.block_n = c.block_k = 0;
  c.num_stages = 0;
  c.num_consumers = 0;
  c.persistent = false;
  c.raster_group = 1;
  return c;
}

}  // namespace plan

namespace plan {
namespace {

// D staged in chunks of this many boxes as a second variant of `tile`, or 0: fp32 D (weight
// gradients, fp32 outputs), whose whole-tile staging costs the ring the most (128x256: 128 KB,
// 2 stages against 4 in chunks of 64 columns), on one split (128x256 split-K spills either
// way), where the kernel takes chunks of two boxes (rules.cpp d_chunk_violation). 16-bit D
// keeps the whole tile until chunks are measured there.
int d_chunk_choice(const GemmProblem& problem, const GemmConfig& tile) {
  if (problem.d_type != DType::fp32 || tile.split_k != 1) return 0;
  GemmConfig chunked = tile;
  chunked.d_chunk_boxes = 2;
  return d_chunk_violation(problem, kernel_fields(problem, chunked)).empty() ? 2 : 0;
}

// Every tile the search considers (legal or not; tile_violation sorts them), in the order
// that breaks ties between equal predictions: block_k, block_m, block_n, consumers, split_k,
// FP8 promotion scheme. Each gets the deepest ring that fits.
std::vector<GemmConfig> tile_configs(const GemmProblem& problem, const GpuInfo& device,
                                     bool swap_ab) {
  std::vector<GemmConfig> tiles;
  const int atom_k = block_k_for(problem.a_type);
  // A swap of few rows holds them all in one tile (one_tile_block_n); one of rows to fit
  // (swap_ab_offered) tries every width in steps of 8 (block_n_choices).
  const bool one_tile_swap = swap_ab && problem.n <= kSwapAbMaxM;
  // Two swizzle atoms of K per stage for 16-bit inputs: half the barrier round trips.
  std::vector<int> block_ks{atom_k};
  if (dtype_bytes(problem.a_type) == 2) block_ks.push_back(2 * atom_k);
  for (int block_k : block_ks)
    for (int block_m : one_tile_swap ? std::vector<int>{64, 128} : std::vector<int>{64, 128, 256})
      for (int block_n : one_tile_swap ? std::vector<int>{one_tile_block_n(problem)}
                                       : block_n_choices(problem.n, swap_ab))
        for (int num_consumers : {1, 2})
          for (int split_k : split_k_choices(problem, block_m, block_n, block_k, device))
            for (int promotion_buffers : promotion_buffer_choices(problem))
              for (bool ordered_issue : ordered_issue_choices(problem, block_m, block_n,
                                                              num_consumers, promotion_buffers))
                for (bool pingpong : pingpong_choices(problem, num_consumers, swap_ab)) {
                  GemmConfig tile;
                  tile.block_m = block_m;
                  tile.block_n = block_n;
                  tile.block_k = block_k;
                  tile.num_consumers = num_consumers;
                  tile.split_k = split_k;
                  tile.promotion_buffers = promotion_buffers;
                  tile.ordered_issue = ordered_issue;
                  tile.pingpong = pingpong;
                  tile.swap_ab = swap_ab;
                  const int stages = max_stages_that_fit(problem, kernel_fields(problem, tile),
                                                         device, kMaxStages);
                  // 2 does not fit: rejected, with its size.
                  tile.num_stages = stages > 0 ? stages : 2;
                  tiles.push_back(tile);
                  if (const int chunk = d_chunk_choice(problem, tile); chunk > 0) {
                    GemmConfig chunked = tile;
                    chunked.d_chunk_boxes = chunk;
                    const int deeper = max_stages_that_fit(
                        problem, kernel_fields(problem, chunked), device, kMaxStages);
                    chunked.num_stages = deeper;
                    if (deeper > stages) tiles.push_back(chunked);
                  }
                }
  return tiles;
}

// The schedules of one legal tile: cluster shapes (checked once each), persistence, raster
// order and the n-tail kernel, each predicted. The rules judge the problem the tile's kernel
// computes (`kernel_problem`: plan.problem, or its swap for a swap_ab tile); the predictions
// take plan.problem, which predict() swaps itself.
void add_schedules(Plan& plan, const GemmProblem& kernel_problem, const GemmConfig& tile) {
  const GemmProblem& problem = kernel_problem;
  const GpuInfo& device = plan.device;
  for (const auto& cluster : kClusterChoices) {
    if (cluster.multicast != Multicast::none && !multicast_offered(problem, tile.swap_ab))
      continue;
    GemmConfig clustered = tile;
    clustered.cluster_m = cluster.cluster_m;
    clustered.cluster_n = cluster.cluster_n;
    clustered.multicast = cluster.multicast;
    std::string why = grouped_violation(problem, kernel_fields(problem, clustered));
    if (why.empty()) why = schedule_violation(problem, kernel_fields(problem, clustered), device);
    if (why.empty()) why = preference_violation(problem, clustered, device);
    if (!why.empty()) {
      plan.rejected.push_back({clustered, std::move(why)});
      continue;
    }
    for (bool persistent : {true, false})
      for (const auto& raster : kRasterChoices)
        for (int variant : {0, 1, 2}) {   // plain, the n-tail kernel, stream-K
          const bool n_tail_kernel = variant == 1;
          GemmConfig config = clustered;
          config.persistent = persistent;
          config.raster_group = raster.group;
          config.raster_order = raster.order;
          config.n_tail_kernel = n_tail_kernel;
          config.stream_k = variant == 2;
          // Stream-K where its runs pay (stream_k_offered) and the rules take it.
          if (config.stream_k &&
              (!stream_k_offered(problem, config, device) ||
               !stream_k_violation(problem, kernel_fields(problem, config), device).empty()))
            continue;
          // The n-tail kernel is offered where the last column of tiles is at most half full
          // (plan/n_tail.hpp) and both kernels are legal; skipped silently elsewhere (a
          // variant, not a tile the user asked for).
          if (n_tail_kernel && (!n_tail_offered(problem, config) ||
                                !legality_violation(plan.problem, config, device).empty()))
            continue;
          // Row-band signals need the raster along M, no split-K and TMA stores.
          if (problem.signal_bands > 0)
            if (std::string signal = signal_violation(problem, kernel_fields(problem, config));
                !signal.empty()) {
              if (variant == 0) plan.rejected.push_back({config, std::move(signal)});
              continue;
            }
          plan.candidates.push_back({config, predict(plan.problem, config, device)});
        }
  }
}

// Every tile of plan.problem's kernel (swap_ab: of D^T = B^T A^T, each tile with swap_ab set)
// the rules accept, with its schedules; the others rejected with their reason.
void add_tiles(Plan& plan, bool swap_ab) {
  const GemmProblem kernel_problem = swap_ab ? swapped_problem(plan.problem) : plan.problem;
  for (const GemmConfig& tile : tile_configs(kernel_problem, plan.device, swap_ab)) {
    const KernelFields fields = kernel_fields(kernel_problem, tile);
    std::string why = grouped_violation(kernel_problem, fields);
    if (why.empty()) why = tile_violation(kernel_problem, fields, plan.device);
    if (!why.empty())
      plan.rejected.push_back({tile, std::move(why)});
    else
      add_schedules(plan, kernel_problem, tile);
  }
}

// Fastest first. Predictions within ~2% of each other are ties (the model is not that
// precise, and DRAM-bound problems tie exactly): among them prefer no stream-K, then fewer waves
// (measured on an H200: M = 64 decode, 64x32 tiles in 2 waves took 94 us where 64x64 in 1 wave
// took 69, both predicted ~71), then more SMs busy in the last wave counted in steps of
// kBusySmsStep, then fewer and larger tiles, then no cluster, then, with split-K, one row tile
// of weight-only B per warp over two, then the faster prediction, then enumeration order.
// (Steps, like the time buckets, keep the order a strict weak ordering, which a threshold on the
// difference would not be.) One to three SMs (2%) are below what the model resolves: compared
// one by one, the busy count chose a slower tile over the faster prediction (H200, forced
// pairs, 2026-11-28: 12350 x 128 x 2832 256x64 cl1x2/a on 98 SMs 30.9-31.8 us against 128x128
// c1 on 97 26.7-26.9; 1081 x 1415 x 654 22.9-23.1 against 21.7-22.1; lost: 100 x 10000 x 1024
// 12.5-12.7 against 11.7-12.0, 24 x 40 x 16 5.8 against 5.6-5.7).
constexpr int kBusySmsStep = 4;

// A second row tile (decode_row_tiles) with split-K loses at a predicted tie: split-K already
// shortens each CTA's chain of steps, which the second tile's bytes in flight shorten too, and
// the tile adds the K warps' sums (H200, decode suite, pairs predicted alike: int4 1 x 2112 x
// 7168 8x64x128 s2 sk8 with two tiles 12.0 us against 8x64x256 s2 sk8 with one 11.0; int8 1 x
// 14336 x 4096 8x64x64 s2 sk3 28.4 against 8x64x128 s2 sk3 26.3). Without split-K two tiles won
// their ties (mxfp4 8 x 14336 x 4096 8x64x128 s2 23.8 against 8x64x256 s2 25.7).
int split_row_tiles(const GemmProblem& problem, const GemmConfig& config) {
  return config.split_k > 1 && decode_row_tiles(problem, config) > 1;
}

void rank_candidates(const GemmProblem& problem, std::vector<Candidate>& candidates) {
  auto bucket = [](double time_us) { return std::floor(std::log(time_us) / std::log(1.02)); };
  std::stable_sort(candidates.begin(), candidates.end(), [&](const Candidate& a,
                                                             const Candidate& b) {
    const auto& pa = a.prediction;
    const auto& pb = b.prediction;
    if (bucket(pa.time_us) != bucket(pb.time_us)) return bucket(pa.time_us) < bucket(pb.time_us);
    // Stream-K only where it is predicted faster: every SM busy in its last "wave" is what it
    // is priced for, not a tie-break (its cut tiles' sums are a cost the model prices roughly).
    if (a.config.stream_k != b.config.stream_k) return b.config.stream_k;
    if (pa.waves != pb.waves) return pa.waves < pb.waves;
    const int busy_a = pa.busy_sms / kBusySmsStep, busy_b = pb.busy_sms / kBusySmsStep;
    if (busy_a != busy_b) return busy_a > busy_b;
    if (pa.num_tiles != pb.num_tiles) return pa.num_tiles < pb.num_tiles;
    const int ca = a.config.cluster_m * a.config.cluster_n;
    const int cb = b.config.cluster_m * b.config.cluster_n;
    if (ca != cb) return ca < cb;
    const int split_tiles_a = split_row_tiles(problem, a.config);
    const int split_tiles_b = split_row_tiles(problem, b.config);
    if (split_tiles_a != split_tiles_b) return split_tiles_a < split_tiles_b;
    if (pa.time_us != pb.time_us) return pa.time_us < pb.time_us;
    return pa.compute_us < pb.compute_us;
  });
}

}  // namespace
}  // namespace plan

Plan plan_gemm(const GemmProblem& call, const GpuInfo& device) {
  validate(call);
  plan::check_memory(call, device);  // the vendor library cannot run it either
  // cuBLASLt has only some of the fused epilogues (no SiLU, no row scales), and a call that
  // asked for one must get it: where only cuBLASLt could run, the call is refused.
  const auto vendor_only = [&](std::string why) {
    if (call.weight_format && call.m > plan::kWeightOnlyMaxM)
      throw InvalidArgument(
          "m", std::to_string(call.m),
          fmt::format("{} weights run on the decode kernels up to M = {}, where reading the "
                      "packed weight still pays; past it dequantize_weight once and run bf16",
                      to_string(*call.weight_format), plan::kWeightOnlyMaxM));
    if (call.weight_format)
      throw InvalidArgument("weight_format", std::string(to_string(*call.weight_format)),
                            fmt::format("only autogemm's decode kernels read packed weights, "
                                        "and none can run this problem: {}",
                                        why));
    if (call.d_type == DType::e4m3 && call.epilogue.gated && plan::is_fp8(call.a_type))
      throw InvalidArgument(
          "d_type", "e4m3",
          "a gated tile writes block_n / 2 columns, so whole 128-column scale groups need "
          "block_n = 256, and FP8 inputs' tiles stop at 128 columns (accumulators and promotion "
          "temporaries exceed the registers): write bf16 and quantize_fp8 it, or use 16-bit "
          "inputs");
    if (call.d_type == DType::e4m3)
      throw InvalidArgument("d_type", "e4m3",
                            fmt::format("only autogemm's kernels write FP8 with 1x128 scales, "
                                        "and none can run this problem: {}",
                                        why));
    if (call.scaling == Scaling::block_1x128_1x128)
      throw InvalidArgument("scaling", "block_1x128_1x128",
                            fmt::format("only autogemm's kernels run FP8 with 1x128 scales on "
                                        "both operands, and none can run this problem: {}",
                                        why));
    if (call.scaling == Scaling::rowwise)
      throw InvalidArgument("scaling", "rowwise",
                            fmt::format("only autogemm's kernels run rowwise FP8, and none can "
                                        "run this problem: {}",
                                        why));
    if (!call.epilogue.empty())
      throw InvalidArgument("epilogue", call.epilogue.describe(),
                            fmt::format("only autogemm's kernels fuse it, and none can run this "
                                        "problem: {}",
                                        why));
    return plan::vendor_plan(call, device, std::move(why));
  };
  if (auto why = plan::vendor_reason(call, device); !why.empty()) return vendor_only(std::move(why));

  // Our kernels read A and B in rows TMA can describe: copies of the caller's where they are
  // not (plan/operand_copy.hpp). The rules and the kernels' predictions see those rows.
  const GemmProblem problem = plan::kernel_problem(call);
  Plan plan;
  plan.problem = problem;
  plan.device = device;
  plan::add_tiles(plan, false);
  // Few rows of A: the same tiles on D^T = B^T A^T, those rows along wgmma's N (plan/swap_ab.hpp).
  if (plan::swap_ab_offered(problem)) plan::add_tiles(plan, true);
  for (const GemmConfig& config : plan::decode_configs(problem, device)) {
    if (auto why = plan::tile_violation(problem, plan::kernel_fields(problem, config), device);
        !why.empty()) {
      // The family's rules fail alike for every shape when the problem is the reason (types,
      // layout, alignment): list it once.
      plan.rejected.push_back({config, std::move(why)});
      break;
    }
    plan.candidates.push_back({config, predict(problem, config, device)});
  }
  plan.problem = call;
  plan::keep_middle_swap_tiles(problem, plan.candidates);
  if (plan.candidates.empty()) {
    // Weight-only B: the decode family's reason is the one that matters (the tile family
    // refuses every packed weight alike).
    auto first = plan.rejected.begin();
    if (call.weight_format)
      first = std::find_if(plan.rejected.begin(), plan.rejected.end(), [](const auto& r) {
        return r.config.instruction == Instruction::mma;
      });
    if (first == plan.rejected.end()) first = plan.rejected.begin();
    return vendor_only(
        fmt::format("no legal {} configuration (first rule broken: {}); cuBLASLt",
                    plan::arch_label(device),
                    plan.rejected.empty() ? "none enumerated" : first->reason));
  }
  const std::string copy_why = tma_load_incompatibility(call);
  if (!copy_why.empty()) {
    // Each candidate pays for the copies; cuBLASLt reads the rows as they are (BF16 and FP16:
    // block-scaled FP8 it refuses), at the rates of its unaligned kernels.
    for (Candidate& c : plan.candidates) plan::add_operand_copies(c.prediction, call, device);
    if (!plan::is_fp8(call.a_type) && call.epilogue.empty())
      plan.candidates.push_back({plan::vendor_config(), predict(call, plan::vendor_config(), device)});
  }
  plan::rank_candidates(call, plan.candidates);
  if (plan.best().config.instruction == Instruction::vendor) {
    const Candidate& ours = *std::find_if(
        plan.candidates.begin(), plan.candidates.end(),
        [](const Candidate& c) { return c.config.instruction != Instruction::vendor; });
    plan.path_reason = fmt::format(
        "{}: copying them into padded rows and running {} (predicted {:.1f} us, {:.1f} of it the "
        "copies) loses to cuBLASLt's kernels for unaligned rows (predicted {:.1f} us); cuBLASLt",
        copy_why, ours.config.describe(), ours.prediction.time_us,
        ours.prediction.operand_copy_us, plan.best().prediction.time_us);
  } else {
    plan.path_reason = plan::kernel_path_reason(call, plan.best().config, device);
  }
  plan.spec = plan::make_spec(call, plan.best().config, device, plan.path_reason);
  return plan;
}

}  // namespace autogemm
