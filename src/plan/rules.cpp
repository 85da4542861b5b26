// The rules of the sm_90a kernel family (rules.hpp): every rule names the field, its value and
// the limit it broke, and the first broken rule is the answer.
#include <fmt/format.h>

#include <algorithm>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/plan.hpp"
#include "kernels/sm90/fp8_scales.cuh"
#include "kernels/sm90/gemm_layout.cuh"
#include "kernels/sm90/stream_k.cuh"
#include "plan/decode_cost.hpp"
#include "plan/kernel_spec.hpp"
#include "plan/n_tail.hpp"
#include "plan/operand_copy.hpp"
#include "plan/rules.hpp"
#include "plan/swap_ab.hpp"
#include "plan/tma_rules.hpp"
#include "plan/wgmma_rules.hpp"

namespace autogemm {

int gemm_smem_bytes(const GemmProblem& problem, const GemmConfig& config) {
  return plan::gemm_smem_bytes(problem, plan::kernel_fields(problem, config));
}

namespace plan {

int kernel_scaling(const GemmProblem& problem) {
  if (dtype_bytes(problem.a_type) != 1) return sm90::kScalingNone;
  switch (problem.scaling) {
    case Scaling::none: return sm90::kScalingNone;
    case Scaling::per_tensor: return sm90::kScalingPerTensor;
    case Scaling::block_1x128_128x128: return sm90::kScalingBlock;
    case Scaling::rowwise: return sm90::kScalingRowwise;
    case Scaling::block_1x128_1x128: return sm90::kScalingBlock1x128;
  }
  return sm90::kScalingNone;
}

int gemm_smem_bytes(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  const bool stage_d = fields.store_path != StorePath::threads;
  const int out_bytes = dtype_bytes(problem.d_type);
  const int staged_cols =
      stage_d ? sm90::d_staged_cols(config.block_n, out_bytes, config.d_chunk_boxes) : 0;
  return sm90::make_smem_layout(config.block_m, config.block_n, config.block_k, config.num_stages,
                                dtype_bytes(problem.a_type), out_bytes, staged_cols,
                                sm90::staged_b_scales(kernel_scaling(problem), config.block_n),
                                problem.grouping == Grouping::k_contiguous)
      .total_bytes;
}

KernelFields kernel_fields(const GemmProblem& problem, const GemmConfig& config,
                           const LadderSwitches& switches) {
  KernelFields f;
  f.config = config;
  f.warp_specialized = switches.warp_specialized;
  f.load_path = switches.load_path;
  if (config.instruction == Instruction::mma) {
    // The decode family stores D element by element: no store path to choose.
    f.decode_ctas_per_sm = decode_ctas_per_sm(problem, config);
    f.decode_row_tiles = decode_row_tiles(problem, config);
    return f;
  }
  // D written transposed (swap_ab): staged as the caller's D tile and stored by TMA
  // (kernels/sm90/epilogue.cuh transposed_offset) where TMA can store the caller's rows, which
  // run along the kernel problem's M; else the threads write it element by element from
  // registers (3.5-4.5 us a 128-row tile against 0.5-0.7 by TMA, H200 tile traces).
  // A ragged right edge of D (TMA would write past N up to the next 16-byte boundary) or D's
  // or C's rows a stride TMA cannot describe: D is staged as for TMA and the threads write it in
  // 16-byte chunks aligned to the caller's rows (one 2-byte store per element ran at 0.6 TB/s
  // where 16-byte stores reach 4.1, H200: 2545 x 5953 x 23 took 74.6 us against 26.7 at
  // N = 5952).
  if (config.swap_ab)
    f.store_path = switches.store_path == StorePath::tma && tma_stores_d_transposed(problem)
                       ? StorePath::tma
                       : StorePath::threads;
  else if (d_needs_thread_stores(problem))
    f.store_path = switches.store_path == StorePath::tma ? StorePath::staged : StorePath::threads;
  else
    f.store_path = switches.store_path;
  return f;
}

namespace {

constexpr int kAtomBytes = sm90::kSwizzleSpanBytes;  // 128: one 128B-swizzle row

bool is_sm90(const GpuInfo& device) { return device.cc == ComputeCapability{9, 0}; }
bool has_tma(const GpuInfo& device) { return device.cc.major >= 9 || device.caps.tma; }

Swizzle swizzle_for_span(int span_bytes) {
  switch (span_bytes) {
    case 128: return Swizzle::b128;
    case 64: return Swizzle::b64;
    case 32: return Swizzle::b32;
    default: return Swizzle::none;
  }
}

// A 2D tensor map over a row-major matrix of `rows` x `cols` elements with `ld` elements
// between rows: TMA lists the contiguous dimension first (hopper-facts.md 3.2).
TmaDescription matrix_box(int64_t rows, int64_t cols, int64_t ld, int elem_bytes, int box_cols,
                          int box_rows, Swizzle swizzle) {
  TmaDescription d;
  d.rank = 2;
  d.elem_bytes = elem_bytes;
  d.global_dims = {uint64_t(cols), uint64_t(rows)};
  d.global_strides = {uint64_t(ld) * uint64_t(elem_bytes)};
  d.box_dims = {uint32_t(box_cols), uint32_t(box_rows)};
  d.swizzle = swizzle;
  return d;
}

bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

std::string instruction_violation(const GemmProblem& problem, const GemmConfig& config,
                                  const GpuInfo& device) {
  if (config.instruction != Instruction::wgmma)
    return fmt::format(
        "instruction = {}: autogemm's kernel family uses wgmma (sm_90a); other devices and "
        "problems go to the vendor library",
        to_string(config.instruction));
  if (!is_sm90(device))
    return fmt::format(
        "instruction = wgmma: needs sm_90a (compute capability 9.0), {} is {} (cc {}.{})",
        device_label(device), arch_label(device), device.cc.major, device.cc.minor);
  const DType in = problem.a_type;
  if (in != DType::bf16 && in != DType::fp16 && !is_fp8(in))
    return fmt::format("a_type = {}: the sm90 kernel takes bf16, fp16, e4m3 or e5m2 inputs",
                       to_string(in));
  if (problem.d_type != DType::bf16 && problem.d_type != DType::fp16 &&
      problem.d_type != DType::fp32 && problem.d_type != DType::e4m3)
    return fmt::format("d_type = {}: the sm90 kernel writes bf16, fp16, fp32 or e4m3",
                       to_string(problem.d_type));
  return {};
}

// FP8 output and the gated epilogue (autogemm/problem.hpp, epilogue.hpp; sm90/epilogue.cuh).
std::string output_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  const bool fp8_out = problem.d_type == DType::e4m3;
  if (!fp8_out && !problem.epilogue.gated) return {};
  const char* what = fp8_out ? "FP8 output (d_type e4m3)" : "a gated epilogue";
  if (config.swap_ab)
    return fmt::format("swap_ab with {}: the kernel's rows would be D's columns, and {}", what,
                       fp8_out ? "a row's 128-column scale spans 128 kernel rows"
                               : "gate and up would be rows of different threads");
  if (config.n_tail_kernel)
    return fmt::format("n_tail_kernel with {}: the narrow kernel's columns are not whole {}",
                       what, fp8_out ? "128-column scale groups" : "gate and up runs");
  if (problem.epilogue.gated && config.block_n % (2 * kGateRun) != 0)
    return fmt::format("block_n = {} with a gated epilogue: a tile holds whole gate and up runs "
                       "of {} columns (a multiple of {})",
                       config.block_n, kGateRun, 2 * kGateRun);
  if (fp8_out) {
    const int cols = sm90::d_tile_cols(config.block_n, problem.epilogue.gated);
    if (cols % 128 != 0)
      return fmt::format("block_n = {} with FP8 output: a tile's {} D columns must be whole "
                         "128-column scale groups (block_n {})",
                         config.block_n, cols, problem.epilogue.gated ? "256, gated" : "128 or 256");
    if (fields.store_path != StorePath::tma)
      return fmt::format("store_path = {} with FP8 output: the amax, scale and cast are written "
                         "for the TMA store",
                         to_string(fields.store_path));
  }
  return {};
}

// Ping-pong consumers (kernels/sm90/gemm_kernel.cuh Consumer::run): two warp-specialised
// consumers fed and stored by TMA, each with whole tiles of 16-bit inputs (FP8 output, split K,
// D^T, the n-tail kernel and masked groups were not built for whole-tile consumers).
std::string pingpong_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  if (!config.pingpong) return {};
  auto no = [](const std::string& what) {
    return fmt::format("pingpong with {}: ping-pong consumers are two warp-specialised "
                       "warpgroups taking whole tiles of 16-bit inputs in turn, loaded and "
                       "stored by TMA, D in bf16, fp16 or fp32",
                       what);
  };
  if (config.num_consumers != 2) return no(fmt::format("num_consumers = {}", config.num_consumers));
  if (!fields.warp_specialized) return no("no producer warpgroup");
  if (fields.load_path != LoadPath::tma || fields.store_path != StorePath::tma)
    return no(fmt::format("load_path = {}, store_path = {}", to_string(fields.load_path),
                          to_string(fields.store_path)));
  if (dtype_bytes(problem.a_type) != 2) return no(fmt::format("a_type = {}", to_string(problem.a_type)));
  if (problem.d_type == DType::e4m3) return no("d_type = e4m3");
  if (config.split_k != 1) return no(fmt::format("split_k = {}", config.split_k));
  if (config.swap_ab) return no("swap_ab");
  if (config.n_tail_kernel) return no("n_tail_kernel");
  if (problem.grouping != Grouping::none && problem.grouping != Grouping::k_contiguous)
    return no(fmt::format("grouping = {}", to_string(problem.grouping)));
  // NVRTC (CUDA 13.0) spills a bias with gelu_tanh on tiles of two or more m64 slabs a
  // consumer holding 128 accumulators: 128x128 20 B, 256x64 4 B; 64x256 and 128x112 do not.
  const Epilogue e = kernel_epilogue(problem);
  if (e.bias && e.activation == Activation::gelu_tanh && config.rows_per_consumer() >= 128 &&
      accumulator_registers(config) >= 128)
    return fmt::format("pingpong with a bias and gelu_tanh on {}x{}: a consumer's {} m64 slabs "
                       "of {} accumulators spill in ptxas (128x128 20 B); take 64-row or "
                       "narrower tiles",
                       config.block_m, config.block_n, config.rows_per_consumer() / 64,
                       accumulator_registers(config));
  return {};
}

}  // namespace

// D staged in chunks (GemmConfig::d_chunk_boxes; kernels/sm90/epilogue.cuh store_tma): the
// cooperative consumers' TMA store, through a staging buffer of one chunk of 128-byte boxes.
// Not built for the paths that keep the whole tile in the staging: ping-pong's turns, FP8
// output's row scales, D^T, the threads' stores, masked groups, a gated tile; nor a tail box.
std::string d_chunk_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  if (config.d_chunk_boxes == 0) return {};
  auto no = [&](const std::string& what) {
    return fmt::format("d_chunk_boxes = {} with {}: D is staged in chunks only by two "
                       "cooperative consumers storing whole 128-byte boxes of bf16, fp16 or "
                       "fp32 D by TMA, ungrouped",
                       config.d_chunk_boxes, what);
  };
  if (config.instruction != Instruction::wgmma) return no("the decode family");
  if (config.num_consumers != 2) return no(fmt::format("num_consumers = {}", config.num_consumers));
  if (config.pingpong) return no("pingpong");
  if (config.swap_ab) return no("swap_ab");
  if (fields.store_path != StorePath::tma) return no(fmt::format("store_path = {}", to_string(fields.store_path)));
  if (problem.d_type == DType::e4m3) return no("d_type = e4m3");
  if (problem.grouping != Grouping::none) return no(fmt::format("grouping = {}", to_string(problem.grouping)));
  if (problem.epilogue.gated) return no("a gated epilogue");
  const int out_bytes = dtype_bytes(problem.d_type);
  const int boxes = sm90::d_main_boxes(config.block_n, out_bytes);
  if (sm90::d_tail_box_cols(config.block_n, out_bytes) != 0 || boxes % config.d_chunk_boxes != 0 ||
      boxes == config.d_chunk_boxes)
    return fmt::format("d_chunk_boxes = {}: block_n = {} of {} D is {} boxes of {} columns{}; "
                       "chunks must split it into two or more whole parts",
                       config.d_chunk_boxes, config.block_n, to_string(problem.d_type), boxes,
                       sm90::d_main_box_cols(out_bytes),
                       sm90::d_tail_box_cols(config.block_n, out_bytes) != 0 ? " and a tail" : "");
  return {};
}

namespace {

std::string path_violation(const GemmProblem& problem, const KernelFields& fields,
                           const GpuInfo& device) {
  if (fields.load_path == LoadPath::threads) {
    // The ladder's teaching steps: every thread copies tiles, so there is no producer, and the
    // copy loop is written for K-major operands only (kernels/sm90/loads.cuh).
    if (fields.warp_specialized)
      return "load_path = threads with warp_specialized: the threads load path has no producer "
             "warpgroup";
    if (problem.layout != Layout::nt)
      return fmt::format("load_path = threads with layout {}: the threads load path is written "
                         "for layout nt (A and B K-major)",
                         to_string(problem.layout));
  }
  const bool uses_tma = fields.load_path == LoadPath::tma || fields.store_path == StorePath::tma;
  if (!uses_tma) return {};
  if (!has_tma(device))
    return fmt::format("load_path/store_path = tma: {} is {}, TMA needs sm_90+",
                       device_label(device), arch_label(device));
  // The strides TMA reads or writes must be describable by tensor maps (16-byte row strides).
  if (fields.load_path == LoadPath::tma)
    if (auto why = tma_load_incompatibility(problem); !why.empty())
      return fmt::format("load_path = tma: {}", why);
  if (fields.store_path == StorePath::tma)
    if (auto why = tma_store_incompatibility(problem); !why.empty())
      return fmt::format("store_path = tma: {}", why);
  return {};
}

std::string tile_shape_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  // Each consumer warpgroup issues m64 wgmmas, and a TMA box has at most 256 rows.
  if (config.block_m != 64 && config.block_m != 128 && config.block_m != 256)
    return fmt::format("block_m = {}: must be 64, 128 or 256 (whole m64 wgmma slabs, at most "
                       "256 rows per TMA box)",
                       config.block_m);
  // wgmma's N steps by 8 up to 256 (PTX ISA, wgmma.mma_async shapes; the integer types' gaps
  // are wgmma_rules.cpp's), and the epilogue handles D in 8-column groups (the accumulator
  // fragment's), 16-byte staged chunks and TMA boxes of whole 1024-byte swizzle repeats.
  if (config.block_n % 8 != 0 || config.block_n < 8 || config.block_n > 256)
    return fmt::format("block_n = {}: must be a multiple of 8 in 8..256 (wgmma's N)",
                       config.block_n);
  const int expected_k = block_k_for(problem.a_type);
  const bool two_atoms = config.block_k == 2 * expected_k && dtype_bytes(problem.a_type) == 2 &&
                         fields.load_path == LoadPath::tma;
  if (config.block_k != expected_k && !two_atoms)
    return fmt::format("block_k = {}: a stage holds one 128-byte swizzle atom of K ({} elements "
                       "of {}), or two for 16-bit inputs loaded by TMA",
                       config.block_k, expected_k, to_string(problem.a_type));
  if (config.num_consumers != 1 && config.num_consumers != 2)
    return fmt::format("num_consumers = {}: the kernel has 1 or 2 consumer warpgroups",
                       config.num_consumers);
  if (!config.pingpong && (config.block_m / config.num_consumers) % 64 != 0)
    return fmt::format("block_m / num_consumers = {} / {} = {}: each consumer warpgroup owns "
                       "whole m64 wgmma slabs, so it must be a multiple of 64 (or pingpong: "
                       "each consumer owns whole tiles)",
                       config.block_m, config.num_consumers,
                       double(config.block_m) / config.num_consumers);
  if (config.num_stages < 1)
    return fmt::format("num_stages = {}: must be >= 1", config.num_stages);
  if (config.promotion_buffers != 1 && config.promotion_buffers != 2)
    return fmt::format("promotion_buffers = {}: FP8 promotes from 1 or 2 temporaries (16-bit "
                       "inputs: 1)",
                       config.promotion_buffers);
  return {};
}

std::string smem_violation(const GemmProblem& problem, const KernelFields& fields,
                           const GpuInfo& device) {
  const int smem = gemm_smem_bytes(problem, fields);
  if (smem > device.smem_per_block_optin_bytes)
    return fmt::format("smem {} B ({} stages) > {} B opt-in limit per block on {}", smem,
                       fields.config.num_stages, device.smem_per_block_optin_bytes,
                       device_label(device));
  return {};
}

// FP8 (either scaling) promotes every k-block: the wgmmas write one or two more fp32 fragments
// as large as the accumulators, which are then scaled and added into them
// (kernels/sm90/fp8_promotion.cuh).
// With ordered issue and one temporary, the slabs are issued and promoted one at a time, so the
// temporary is one slab's fragment (block_n / 2).
int promotion_registers(const GemmProblem& problem, const GemmConfig& config) {
  if (!is_fp8(problem.a_type)) return 0;
  if (config.ordered_issue && config.promotion_buffers == 1) return config.block_n / 2;
  return accumulator_registers(config) * config.promotion_buffers;
}

}  // namespace

std::string register_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  const int budget = consumer_register_budget(fields);
  const int accumulators = accumulator_registers(config);
  const int promotion = promotion_registers(problem, config);
  const int slabs = config.rows_per_consumer() / 64;
  const int headroom =
      config.promotion_buffers == 2
          ? kOverlappedPromotionHeadroom + kOverlappedPromotionHeadroomPerExtraSlab * (slabs - 1)
      : config.ordered_issue ? kOverlappedPromotionHeadroom
                             : kRegisterHeadroom;
  if (promotion > 0 && accumulators + promotion > budget - headroom)
    return fmt::format(
        "accumulators {} ({} m64 slabs x block_n/2 = {}) + FP8 promotion temporaries {} = {} "
        "registers per consumer thread > {} = register budget {} - {} headroom",
        accumulators, config.rows_per_consumer() / 64, config.block_n / 2, promotion,
        accumulators + promotion, budget - headroom, budget, headroom);
  if (accumulators > budget - kRegisterHeadroom)
    return fmt::format(
        "accumulators {} registers per consumer thread ({} m64 slabs x block_n/2 = {}) > {} = "
        "register budget {} ({}) - {} headroom",
        accumulators, config.rows_per_consumer() / 64, config.block_n / 2,
        budget - kRegisterHeadroom, budget,
        !fields.warp_specialized ? "no warp specialisation"
        : config.num_consumers == 1 ? "setmaxnreg, 1 consumer + producer"
                                    : "setmaxnreg, 2 consumers + producer",
        kRegisterHeadroom);
  return {};
}

namespace {

// The FP8 kernel's own rules: TMA loads (the threads path copies 16-bit elements), and with
// block scales a tile touching at most two 128-column B scale blocks (the promotion selects
// between two; kernels/sm90/fp8_scales.cuh).
std::string fp8_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  if (!is_fp8(problem.a_type)) {
    if (config.promotion_buffers != 1)
      return fmt::format("promotion_buffers = {} with {} inputs: 16-bit inputs accumulate in "
                         "place, promotion buffers exist for FP8 only (must be 1)",
                         config.promotion_buffers, to_string(problem.a_type));
    if (config.ordered_issue)
      return fmt::format("ordered_issue with {} inputs: there is no promotion for the other "
                         "consumer to hide (FP8 only)",
                         to_string(problem.a_type));
    return {};
  }
  if (!is_fp8(problem.b_type))
    return fmt::format("b_type = {}: must be e4m3 or e5m2 when a_type is {}",
                       to_string(problem.b_type), to_string(problem.a_type));
  if (problem.scaling == Scaling::none)
    return "scaling = none with FP8 inputs: the FP8 kernel needs per_tensor or block scales";
  if (!a_is_k_major(problem.layout) || !b_is_k_major(problem.layout))
    return fmt::format("layout = {} with FP8 inputs: FP8 wgmma reads both operands K-major "
                       "(layout nt)",
                       to_string(problem.layout));
  if (config.ordered_issue && (config.num_consumers != 2 || !fields.warp_specialized))
    return fmt::format("ordered_issue with num_consumers = {}{}: two consumer warpgroups take "
                       "turns issuing, fed by the producer warpgroup",
                       config.num_consumers, fields.warp_specialized ? "" : ", not warp-specialised");
  if (config.promotion_buffers == 2 && config.num_stages < 2)
    return fmt::format("promotion_buffers = 2 with num_stages = {}: overlapped promotion keeps "
                       "one wgmma group in flight, which needs a ring of >= 2 stages",
                       config.num_stages);
  if (fields.load_path != LoadPath::tma)
    return "load_path = threads with FP8 inputs: FP8 tiles arrive by TMA only";
  const bool staged = problem.scaling == Scaling::block_1x128_128x128 ||
                      problem.scaling == Scaling::block_1x128_1x128;
  if (staged && !fields.warp_specialized)
    return "warp_specialized = false with block-scaled FP8: the producer warpgroup's second warp "
           "copies each k-block's scales into shared memory";
  // 1x128 B scales: each promotion temporary has its block_n / 4 column scales in registers
  // beside it (kernels/sm90/fp8_promotion.cuh kColumnScaled), and the tile's rows and columns
  // are the call's.
  if (problem.scaling == Scaling::block_1x128_1x128) {
    if (config.swap_ab)
      return "swap_ab with 1x128 B scales: not built (the kernel scales the call's columns one "
             "by one only unswapped)";
    if (config.promotion_buffers != 1)
      return fmt::format("promotion_buffers = {} with 1x128 B scales: one temporary (its column "
                         "scales take the registers a second would)",
                         config.promotion_buffers);
    // Turns (ordered issue) with one m64 slab a consumer: the slab's temporary is the whole
    // one, so the consumers alternate whole k-blocks and one promotes while the other's
    // wgmmas run. Slab waves over two slabs were not built for the column scales.
    if (config.ordered_issue && config.rows_per_consumer() != 64)
      return fmt::format("ordered_issue with 1x128 B scales and {} rows a consumer: turns are "
                         "built for one m64 slab a consumer (block_m 128, two consumers)",
                         config.rows_per_consumer());
    return {};
  }
  // Swapped operands scale the tile's columns one by one and its rows per 128-row block, so
  // the checks of 128-column blocks below are the unswapped kernel's.
  if (config.swap_ab) return {};
  const int blocks = sm90::max_b_scale_blocks_per_tile(config.block_n);
  if (problem.scaling == Scaling::block_1x128_128x128 && blocks > sm90::kMaxBScaleBlocksPerTile)
    return fmt::format("block_n = {}: a block-scaled FP8 tile can touch {} 128-column B scale "
                       "blocks; the promotion handles at most {} (block_n <= 128 + gcd(block_n, "
                       "128))",
                       config.block_n, blocks, sm90::kMaxBScaleBlocksPerTile);
  if (problem.scaling == Scaling::block_1x128_128x128 && config.promotion_buffers == 2 &&
      sm90::b_scale_split_varies(config.block_n))
    return fmt::format("block_n = {} with promotion_buffers = 2: where a tile's 128-column B "
                       "scale blocks split varies per tile (block_n neither divides nor is a "
                       "multiple of 128), the overlapped promotion's per-column selects drive "
                       "ptxas to minutes of compile time and spills (64x96 pb2: 198 s, 932 B): "
                       "use promotion_buffers = 1",
                       config.block_n);
  return {};
}

std::string wgmma_shape_violation(const GemmProblem& problem, const GemmConfig& config,
                                  const GpuInfo& device) {
  WgmmaShape shape;
  shape.m = 64;
  shape.n = config.block_n;  // one instruction spans the CTA tile's width
  shape.k = wgmma_k(problem.a_type);
  shape.a_type = problem.a_type;
  shape.b_type = problem.b_type;
  shape.accumulator = problem.accumulator;
  shape.a_k_major = a_is_k_major(problem.layout);
  shape.b_k_major = b_is_k_major(problem.layout);
  if (auto why = wgmma_violation(shape, device.cc); !why.empty())
    return fmt::format("wgmma m64n{}k{}: {}", shape.n, shape.k, why);
  return {};
}

std::string tma_box_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  const int in_bytes = dtype_bytes(problem.a_type);
  const int atom_elems = kAtomBytes / in_bytes;
  // An MN-major operand is loaded as atom-wide (128 B) column slabs of the tile, each one TMA
  // box {atom, block_k}; the tile's MN extent must be whole slabs (hopper-facts.md 3.2).
  if (fields.load_path == LoadPath::tma && !b_is_k_major(problem.layout) &&
      config.block_n % atom_elems != 0)
    return fmt::format("block_n = {}: B is N-major (layout {}), loaded as {}-column (128 B) "
                       "swizzled slabs, so block_n must be a multiple of {}",
                       config.block_n, to_string(problem.layout), atom_elems, atom_elems);
  if (fields.load_path == LoadPath::tma && !a_is_k_major(problem.layout) &&
      config.block_m % atom_elems != 0)
    return fmt::format("block_m = {}: A is M-major (layout {}), loaded as {}-row (128 B) "
                       "swizzled slabs, so block_m must be a multiple of {}",
                       config.block_m, to_string(problem.layout), atom_elems, atom_elems);
  for (const auto& box : gemm_tma_boxes(problem, fields))
    if (auto why = tma_violation(box.description); !why.empty())
      return fmt::format("TMA box of {} {{{}, {}}}: {}", box.operand,
                         box.description.box_dims[0], box.description.box_dims[1], why);
  return {};
}

}  // namespace

int block_k_for(DType input) { return kAtomBytes / dtype_bytes(input); }

bool accumulates_fp32_from_dram(const GemmProblem& problem) {
  return problem.reads_c && dtype_bytes(problem.d_type) == 4;
}

int consumer_register_budget(const KernelFields& fields) {
  if (!fields.warp_specialized) return 255;
  return fields.config.num_consumers >= 2 ? 232 : 240;
}

int accumulator_registers(const GemmConfig& config) {
  if (config.num_consumers < 1) return 0;   // cuBLASLt's config has no consumers
  const int slabs = config.rows_per_consumer() / 64;
  return slabs * config.block_n / 2;
}

std::string device_label(const GpuInfo& device) {
  if (!device.preset.empty()) return device.preset;
  if (!device.name.empty()) return device.name;
  return fmt::format("device {}", device.ordinal);
}

std::string memory_violation(const GemmProblem& problem, const GpuInfo& device) {
  if (device.memory_total_bytes <= 0) return {};
  // One matrix's extent: every row but the last at the leading dimension, then one row. In
  // double: the product of three sizes below 2^31 overflows 64 bits.
  auto extent = [](int64_t rows, int64_t ld, int64_t row_length, DType type) {
    return (double(rows - 1) * double(ld) + double(row_length)) * dtype_bytes(type);
  };
  const GemmProblem& p = problem;
  const bool a_k_major = a_is_k_major(p.layout), b_k_major = b_is_k_major(p.layout);
  // Grouped problems are packed: D (and K-major A) have stored_rows() rows, K-major B groups x
  // N (groups along K: one B of all tokens).
  const int64_t rows = p.stored_rows();
  double needed = extent(a_k_major ? rows : p.k, p.lda_or_packed(), a_k_major ? p.k : p.m,
                         p.a_type) +
                  extent(b_k_major ? p.num_groups * p.n : p.k, p.ldb_or_packed(),
                         b_k_major ? p.k : p.n, p.b_type) +
                  extent(rows, p.ldd_or_packed(), p.n, p.d_type);
  if (p.reads_c) needed += extent(rows, p.ldc_or_packed(), p.n, p.d_type);
  const double available = double(device.memory_total_bytes);
  if (needed <= available) return {};
  return fmt::format("A, B{} and D need {:.0f} bytes ({:.1f} GiB); {} has {:.0f} bytes "
                     "({:.1f} GiB) of memory",
                     p.reads_c ? ", C" : "", needed, needed / double(1 << 30),
                     device_label(device), available, available / double(1 << 30));
}

void check_memory(const GemmProblem& problem, const GpuInfo& device) {
  const std::string why = memory_violation(problem, device);
  if (why.empty()) return;
  // A leading dimension that alone makes the operands too big is what to name: packed rows
  // would fit, so the sizes are not what the caller got wrong.
  for (const auto& [name, ld] : {std::pair{"lda", &GemmProblem::lda}, {"ldb", &GemmProblem::ldb},
                                 {"ldc", &GemmProblem::ldc}, {"ldd", &GemmProblem::ldd}}) {
    if (problem.*ld == 0) continue;
    GemmProblem packed = problem;
    packed.*ld = 0;
    if (memory_violation(packed, device).empty())
      throw InvalidArgument(name, std::to_string(problem.*ld), why);
  }
  throw InvalidArgument("problem", fmt::format("{} x {} x {}", problem.m, problem.n, problem.k),
                        why);
}

std::string arch_label(const GpuInfo& device) {
  if (!device.caps.arch_name.empty()) return device.caps.arch_name;
  return fmt::format("sm_{}{}", device.cc.major, device.cc.minor);
}

std::vector<NamedTmaBox> gemm_tma_boxes(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  const int in_bytes = dtype_bytes(problem.a_type);
  const int out_bytes = dtype_bytes(problem.d_type);
  const int atom_elems = kAtomBytes / in_bytes;
  std::vector<NamedTmaBox> boxes;
  if (fields.load_path == LoadPath::tma) {
    // K-major A (M x K): box {atom, block_m}; M-major A (K x M): box {atom, block_k} per slab.
    // Grouped problems (layout nt): A's stored rows (masked: groups x max_m) and B as one
    // (groups x N, K) matrix.
    if (a_is_k_major(problem.layout))
      boxes.push_back({"A", matrix_box(problem.stored_rows(), problem.k, problem.lda_or_packed(),
                                       in_bytes, atom_elems, config.block_m, Swizzle::b128)});
    else
      boxes.push_back({"A", matrix_box(problem.k, problem.m, problem.lda_or_packed(), in_bytes,
                                       atom_elems, config.block_k, Swizzle::b128)});
    // K-major B (N x K): box {atom, block_n}; N-major B (K x N): box {atom, block_k} per slab.
    if (b_is_k_major(problem.layout))
      boxes.push_back({"B", matrix_box(problem.num_groups * problem.n, problem.k,
                                       problem.ldb_or_packed(), in_bytes, atom_elems,
                                       config.block_n, Swizzle::b128)});
    else
      boxes.push_back({"B", matrix_box(problem.k, problem.n, problem.ldb_or_packed(), in_bytes,
                                       atom_elems, config.block_k, Swizzle::b128)});
  }
  if (fields.store_path == StorePath::tma && config.swap_ab) {
    // D^T: the caller's D (the kernel's N rows of its M columns) leaves in boxes of block_n
    // caller rows by 128 bytes of its columns, each consumer its rows' (epilogue.cuh
    // transposed_offset).
    const int box_cols = sm90::kSwizzleSpanBytes / out_bytes;
    if (problem.reads_c)
      boxes.push_back({"C", matrix_box(problem.n, problem.m, problem.ldc_or_packed(), out_bytes,
                                       box_cols, config.block_n, Swizzle::b128)});
    boxes.push_back({"D", matrix_box(problem.n, problem.m, problem.ldd_or_packed(), out_bytes,
                                     box_cols, config.block_n, Swizzle::b128)});
  } else if (fields.store_path == StorePath::tma) {
    // D (M x N) leaves in 128-byte column slabs and one tail slab of the remaining columns
    // (gemm_layout.cuh d_main_boxes, the same functions the kernel uses), one map each; each
    // consumer warpgroup stores its own rows, block_m / num_consumers or with ping-pong block_m
    // (runtime/tensor_maps.cpp). A gated tile stores block_n / 2 columns of D's N / 2
    // (sm90::d_tile_cols).
    const int rows = config.num_consumers >= 1 ? config.rows_per_consumer() : config.block_m;
    const int tile_cols = sm90::d_tile_cols(config.block_n, problem.epilogue.gated);
    const int64_t d_cols = problem.d_cols();
    const auto add = [&](int cols, Swizzle swizzle, bool tail) {
      if (problem.reads_c)
        boxes.push_back({"C", matrix_box(problem.stored_rows(), d_cols, problem.ldc_or_packed(),
                                         out_bytes, cols, rows, swizzle), tail});
      boxes.push_back({"D", matrix_box(problem.stored_rows(), d_cols, problem.ldd_or_packed(),
                                       out_bytes, cols, rows, swizzle), tail});
    };
    if (sm90::d_main_boxes(tile_cols, out_bytes) > 0)
      add(sm90::d_main_box_cols(out_bytes), Swizzle::b128, false);
    if (const int tail_cols = sm90::d_tail_box_cols(tile_cols, out_bytes); tail_cols > 0)
      add(tail_cols, swizzle_for_span(sm90::d_tail_swizzle_bytes(tile_cols, out_bytes)), true);
  }
  return boxes;
}

std::string tile_violation(const GemmProblem& problem, const KernelFields& fields,
                           const GpuInfo& device) {
  const GemmConfig& config = fields.config;
  // Weight-only B is read by the decode family alone: cuBLASLt has no such formats, and the
  // wgmma family's TMA ring carries B to the tensor cores as stored.
  if (problem.weight_format && config.instruction != Instruction::mma)
    return fmt::format("weight_format = {}: only the decode family (instruction = mma) "
                       "dequantises weights in registers; {} reads B as stored",
                       to_string(*problem.weight_format),
                       config.instruction == Instruction::vendor ? "cuBLASLt" : "the wgmma family");
  if (config.instruction == Instruction::vendor) return {};  // cuBLASLt takes any valid problem
  if (config.instruction == Instruction::mma && config.d_chunk_boxes > 0)
    return d_chunk_violation(problem, fields);
  if (auto why = swap_ab_violation(problem, fields); !why.empty()) return why;
  if (config.instruction == Instruction::mma) return decode_violation(problem, fields, device);
  // In order; each check may assume the ones before it passed (later ones divide by the sizes).
  if (auto why = instruction_violation(problem, config, device); !why.empty()) return why;
  if (auto why = path_violation(problem, fields, device); !why.empty()) return why;
  if (auto why = tile_shape_violation(problem, fields); !why.empty()) return why;
  if (auto why = smem_violation(problem, fields, device); !why.empty()) return why;
  if (auto why = register_violation(problem, fields); !why.empty()) return why;
  if (auto why = fp8_violation(problem, fields); !why.empty()) return why;
  if (auto why = output_violation(problem, fields); !why.empty()) return why;
  if (auto why = pingpong_violation(problem, fields); !why.empty()) return why;
  if (auto why = d_chunk_violation(problem, fields); !why.empty()) return why;
  if (auto why = wgmma_shape_violation(problem, config, device); !why.empty()) return why;
  return tma_box_violation(problem, fields);
}

// Stream-K (GemmConfig::stream_k, kernels/sm90/stream_k.cuh): the persistent warp-specialised
// kernel of single-CTA clusters (its slots are the grid's CTAs, which a cluster launch may cap
// below the plan), whole K per tile otherwise (no split-K), cooperative consumers (ping-pong's
// alternate tiles would count one tile's pieces on two consumers' counters), ungrouped and
// without band signals or an n-tail kernel. Every CTA's run at least one k-block (an empty run
// inside a tile would never arrive), a tile cut into at most 32 pieces (one polling lane each).
std::string stream_k_violation(const GemmProblem& problem, const KernelFields& fields,
                               const GpuInfo& device) {
  const GemmConfig& c = fields.config;
  if (!c.stream_k) return {};
  auto no = [](const std::string& what, const std::string& why) {
    return fmt::format("stream_k with {}: {}", what, why);
  };
  const std::string why_persistent =
      "stream-K shares K between the persistent grid's CTAs, fed by the producer's TMA loads";
  if (!c.persistent) return no("a non-persistent grid", why_persistent);
  if (!fields.warp_specialized) return no("no producer warpgroup", why_persistent);
  if (fields.load_path != LoadPath::tma)
    return no(fmt::format("load_path = {}", to_string(fields.load_path)), why_persistent);
  if (c.split_k != 1)
    return no(fmt::format("split_k = {}", c.split_k), "the shared tiles are cut by the runs");
  if (c.cluster_m * c.cluster_n != 1)
    return no(fmt::format("cluster {}x{}", c.cluster_m, c.cluster_n),
              "a cluster launch may run fewer CTAs than planned, and the runs follow the grid");
  if (c.pingpong) return no("pingpong", "a tile's pieces would count on two consumers' counters");
  if (c.n_tail_kernel) return no("n_tail_kernel", "the last column's tiles are another kernel's");
  if (problem.grouping != Grouping::none)
    return no(fmt::format("grouping = {}", to_string(problem.grouping)),
              "the groups' tiles are skipped at run time, which the runs cannot know");
  if (problem.signal_bands > 0)
    return no(fmt::format("signal_bands = {}", problem.signal_bands),
              "band signals count whole tiles");
  const int64_t tiles = cluster_work_items(problem, c);   // one CTA a cluster (above)
  const int64_t k_blocks = (problem.k + c.block_k - 1) / c.block_k;
  const int64_t slots = device.sm_count;   // the grid (plan/kernel_spec.cpp make_launch)
  if (tiles * k_blocks * slots >= (int64_t(1) << 31))
    return no(fmt::format("{} tiles of {} k-blocks on {} SMs", tiles, k_blocks, slots),
              "the runs are counted in 32-bit units (tiles x k-blocks x SMs < 2^31)");
  const int shared = sm90::stream_k_tiles(int(tiles), int(slots));
  if (shared > 0 && int64_t(shared) * k_blocks < slots)
    return no(fmt::format("{} shared tiles of {} k-blocks on {} SMs", shared, k_blocks, slots),
              "every SM's run needs at least one k-block");
  if (const int pieces = sm90::stream_k_max_pieces(int(tiles), int(slots), int(k_blocks));
      pieces > kMaxSplitK)
    return no(fmt::format("{} tiles of {} k-blocks on {} SMs", tiles, k_blocks, slots),
              fmt::format("a tile would be cut into up to {} pieces; at most {} (one polling lane "
                          "each)", pieces, kMaxSplitK));
  return {};
}

std::string schedule_violation(const GemmProblem& problem, const KernelFields& fields,
                               const GpuInfo& device) {
  const GemmConfig& config = fields.config;
  // The decode family's split and grid are among its tile rules (decode_violation).
  if (config.instruction != Instruction::wgmma) return {};
  if (config.raster_group < 1)
    return fmt::format("raster_group = {}: must be >= 1 (1 = plain order)", config.raster_group);
  if (config.split_k < 1 || config.split_k > kMaxSplitK)
    return fmt::format("split_k = {}: must be 1..{} (the last split of a tile polls the others' "
                       "ready flags with one lane each)",
                       config.split_k, kMaxSplitK);
  if (auto why = n_tail_violation(problem, fields); !why.empty()) return why;
  if (auto why = stream_k_violation(problem, fields, device); !why.empty()) return why;
  if (config.cluster_m < 1 || config.cluster_n < 1)
    return fmt::format("cluster {}x{}: cluster dimensions must be >= 1", config.cluster_m,
                       config.cluster_n);
  const int cluster_size = config.cluster_m * config.cluster_n;
  // One multicast partner is all the kernel uses (DeepGEMM enumerates 1 and 2 as well); larger
  // clusters tie more SMs to one GPC for little extra L2 saving.
  if (cluster_size > 2)
    return fmt::format("cluster {}x{} has {} CTAs: autogemm's kernel uses clusters of at most 2",
                       config.cluster_m, config.cluster_n, cluster_size);
  if (config.multicast == Multicast::a && config.cluster_n != 2)
    return fmt::format("multicast a with cluster {}x{}: sharing A needs the two CTAs side by "
                       "side along N (cluster 1x2)",
                       config.cluster_m, config.cluster_n);
  if (config.multicast == Multicast::b && config.cluster_m != 2)
    return fmt::format("multicast b with cluster {}x{}: sharing B needs the two CTAs stacked "
                       "along M (cluster 2x1)",
                       config.cluster_m, config.cluster_n);
  if (config.multicast != Multicast::none && fields.load_path != LoadPath::tma)
    return fmt::format("multicast {} with load_path = threads: multicast is a TMA feature",
                       to_string(config.multicast));
  if (cluster_size == 1) return {};
  if (!fields.warp_specialized)
    return fmt::format("cluster {}x{} without warp specialisation: the producer warpgroup issues "
                       "the multicast loads and the cluster barriers",
                       config.cluster_m, config.cluster_n);
  if (!device.caps.clusters)
    return fmt::format("cluster {}x{}: {} ({}) has no thread-block clusters (sm_90+)",
                       config.cluster_m, config.cluster_n, device_label(device),
                       arch_label(device));
  return {};
}

// Groups along K (sm90/gemm_kernel.cuh produce_tiles), beside the grouped rules
// below: a tile stores into one group's D, and the producer warp zeroes the tokens past a run in
// the stage, so it is the warp-specialised path, one CTA a cluster (a multicast stage would need
// every receiver's zeroing before either consumes it).
static std::string k_grouped_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& c = fields.config;
  const char* what = "groups along K (k_contiguous)";
  if (problem.m % c.block_m != 0)
    return fmt::format("block_m = {} with {}: a tile must not store into the next group's D (m = "
                       "{} rows a group)",
                       c.block_m, what, problem.m);
  if (c.cluster_n != 1)
    return fmt::format("cluster {}x{} with {}: one CTA a cluster (each zeroes its own stages)",
                       c.cluster_m, c.cluster_n, what);
  if (c.swap_ab) return fmt::format("swap_ab with {}: not supported", what);
  if (!fields.warp_specialized)
    return fmt::format("{} needs the warp-specialised path: its producer warp zeroes a run's "
                       "last tokens",
                       what);
  return {};
}

std::string grouped_violation(const GemmProblem& problem, const KernelFields& fields) {
  if (problem.grouping == Grouping::none) return {};
  const GemmConfig& c = fields.config;
  const std::string what = fmt::format("grouped GEMM ({})", to_string(problem.grouping));
  // The decode family takes masked groups of weight-only B (decode_violation has its rules).
  if (c.instruction == Instruction::mma && problem.grouping == Grouping::masked &&
      problem.weight_format)
    return {};
  if (c.instruction != Instruction::wgmma)
    return fmt::format("{} runs on the tile family (wgmma){}, not {}", what,
                       problem.grouping == Grouping::masked
                           ? " or, with weight-only B, the decode family"
                           : "",
                       to_string(c.instruction));
  if (problem.grouping == Grouping::k_contiguous)
    if (auto why = k_grouped_violation(problem, fields); !why.empty()) return why;
  // A tile takes one group. Masked: each group's tiles start at its first row (the scheduler's
  // row0), any block_m. Contiguous: tiles start every block_m rows, so block_m must divide the
  // runs' alignment (grouped.hpp).
  if (problem.grouping == Grouping::contiguous && kGroupedRowAlignment % c.block_m != 0)
    return fmt::format("block_m = {} with {}: a tile must not cross a group boundary (runs "
                       "start every {} rows), so block_m is 64 or 128",
                       c.block_m, what, kGroupedRowAlignment);
  // Masked block-scaled FP8: with 128 or more rows per tile ptxas spills 64 B (the scale warp's
  // row pointers beside the per-group tile arithmetic, in its 40 registers).
  if (problem.grouping == Grouping::masked && problem.scaling == Scaling::block_1x128_128x128 &&
      c.block_m > 64)
    return fmt::format("block_m = {} with masked block-scaled FP8: 64-row tiles only (ptxas "
                       "spills with more rows per tile)",
                       c.block_m);
  // Both CTAs of a cluster must make the same skip decisions: they share the tile's rows
  // only when side by side along N (sm90/tile_scheduler.cuh next_tile).
  if (c.cluster_m != 1)
    return fmt::format("cluster {}x{} with {}: CTAs stacked along M would take different groups",
                       c.cluster_m, c.cluster_n, what);
  if (c.split_k != 1)
    return fmt::format("split_k = {} with {}: not supported (the groups' tiles fill the GPU)",
                       c.split_k, what);
  if (c.n_tail_kernel) return fmt::format("n_tail_kernel with {}: not supported", what);
  if (fields.load_path != LoadPath::tma)
    return fmt::format("load_path = threads with {}: a group's place (B's group offset, a run's "
                       "first token) is a TMA coordinate",
                       what);
  return {};
}

// Row-band signals (GemmProblem::signal_bands): one kernel walks D's rows band by band and each
// storing consumer counts its tiles' TMA stores into the band's counter (sm90/band_signal.cuh).
// So: the tile family, D's rows as the caller's (no swap), every tile stored whole by one kernel
// (no split-K, no n-tail kernel), TMA stores (whose completion one thread can wait for), and
// cluster tiles ordered along M (the scheduler cuts its groups at band ends).
std::string signal_violation(const GemmProblem& problem, const KernelFields& fields) {
  if (problem.signal_bands == 0) return {};
  const GemmConfig& c = fields.config;
  const std::string what = fmt::format("signal_bands = {}", problem.signal_bands);
  if (c.instruction != Instruction::wgmma)
    return fmt::format("{}: row-band signals run on the tile family (wgmma), not {}", what,
                       to_string(c.instruction));
  if (c.swap_ab) return fmt::format("{}: a swapped kernel walks D's columns, not its row bands", what);
  if (c.split_k != 1)
    return fmt::format("{} with split_k = {}: a tile's last split stores it; band signals count "
                       "whole tiles", what, c.split_k);
  if (c.n_tail_kernel) return fmt::format("{} with n_tail_kernel: two kernels would share a band", what);
  if (fields.store_path != StorePath::tma)
    return fmt::format("{} with store_path = {}: the bands' stores are TMA's (one thread waits "
                       "for their completion)", what, to_string(fields.store_path));
  if (c.raster_order != RasterOrder::along_m)
    return fmt::format("{} with raster along N: the tiles must run band by band along M", what);
  return {};
}

int64_t signal_band_rows(const GemmConfig& config) {
  return int64_t(config.block_m) * config.cluster_m;
}

std::string kernel_violation(const GemmProblem& problem, const KernelFields& fields,
                             const GpuInfo& device) {
  if (auto why = grouped_violation(problem, fields); !why.empty()) return why;
  if (auto why = signal_violation(problem, fields); !why.empty()) return why;
  if (auto why = tile_violation(problem, fields, device); !why.empty()) return why;
  if (auto why = schedule_violation(problem, fields, device); !why.empty()) return why;
  if (!fields.config.n_tail_kernel) return {};
  // Each of the two kernels must be legal on its own columns.
  const NTailSplit split = split_n_tail(problem, fields);
  for (const auto& [sub_problem, sub_fields, which] :
       {std::tuple{split.main_problem, split.main_fields, "main"},
        std::tuple{split.tail_problem, split.tail_fields, "tail"}}) {
    std::string why = tile_violation(sub_problem, sub_fields, device);
    if (why.empty()) why = schedule_violation(sub_problem, sub_fields, device);
    if (!why.empty())
      return fmt::format("n_tail_kernel: the {} kernel ({} columns, {}): {}", which,
                         sub_problem.n, sub_fields.config.describe(), why);
  }
  return {};
}

std::string preference_violation(const GemmProblem& problem, const GemmConfig& config,
                                 const GpuInfo& device) {
  const int cluster_size = config.cluster_m * config.cluster_n;
  if (config.instruction == Instruction::vendor || cluster_size == 1) return {};
  if (config.n_tail_kernel) {
    // The cluster tiles only the main kernel's columns (the tail kernel has none).
    GemmProblem main_problem = problem;
    main_problem.n -= n_tail_columns(problem, config);
    GemmConfig main_config = config;
    main_config.n_tail_kernel = false;
    if (auto why = preference_violation(main_problem, main_config, device); !why.empty())
      return fmt::format("n_tail_kernel: the main kernel ({} columns): {}", main_problem.n, why);
    return {};
  }
  // Both CTAs of a cluster should have a tile (an edge CTA without one still runs, with TMA
  // zero-filling its loads, so its partner stays in step), and a persistent grid of whole
  // clusters should keep every SM busy.
  if (device.sm_count % cluster_size != 0)
    return fmt::format("cluster {}x{}: {} SMs is not a multiple of the cluster size {}",
                       config.cluster_m, config.cluster_n, device.sm_count, cluster_size);
  const int64_t tiles_m = (problem.m + config.block_m - 1) / config.block_m;
  const int64_t tiles_n = (problem.n + config.block_n - 1) / config.block_n;
  if (config.cluster_m == 2 && tiles_m % 2 != 0)
    return fmt::format("cluster 2x1: {} tiles along M (ceil({} / {})) is odd; the cluster must "
                       "divide the tile count",
                       tiles_m, problem.m, config.block_m);
  if (config.cluster_n == 2 && tiles_n % 2 != 0)
    return fmt::format("cluster 1x2: {} tiles along N (ceil({} / {})) is odd; the cluster must "
                       "divide the tile count",
                       tiles_n, problem.n, config.block_n);
  return {};
}

std::string operand_violation(const KernelSpec& spec, const GemmOperands& operands) {
  if (spec.vendor) return {};
  if (spec.config.instruction == Instruction::mma) {
    // The decode family reads A and B in 16-byte vectors and writes D element by element; a
    // copied operand is read from the launcher's copy, not the caller's pointer.
    for (const auto& [name, pointer, copied] :
         {std::tuple{"a", operands.a, spec.copy_a.active()},
          std::tuple{"b", operands.b, spec.copy_b.active()}})
      if (const auto address = reinterpret_cast<uintptr_t>(pointer); !copied && address % 16 != 0)
        return fmt::format("{} = {:#x}: the decode family's 16-byte loads need a 16-byte aligned "
                           "address",
                           name, address);
    return {};
  }
  for (const KernelLaunch& kernel : spec.kernels)
    for (const TensorMapSpec& map : kernel.tensor_maps) {
      // A swapped kernel's A is the call's B and its B the call's A (plan/swap_ab.hpp).
      const char operand = !kernel.fields.config.swap_ab ? map.operand
                           : map.operand == 'A'         ? 'B'
                           : map.operand == 'B'         ? 'A'
                                                        : map.operand;
      // A copied operand is read from the launcher's copy, not the caller's pointer.
      if ((operand == 'A' && spec.copy_a.active()) || (operand == 'B' && spec.copy_b.active()))
        continue;
      const void* pointer = operand == 'A'   ? operands.a
                            : operand == 'B' ? operands.b
                            : operand == 'C' ? operands.c
                                             : operands.d;
      const char name[2] = {char(operand - 'A' + 'a'), '\0'};
      if (auto why = tma_address_violation(name, reinterpret_cast<uintptr_t>(pointer));
          !why.empty())
        return why;
    }
  return {};
}

int max_stages_that_fit(const GemmProblem& problem, KernelFields fields, const GpuInfo& device,
                        int max_stages) {
  for (int stages = max_stages; stages >= 2; --stages) {
    fields.config.num_stages = stages;
    if (gemm_smem_bytes(problem, fields) <= device.smem_per_block_optin_bytes) return stages;
  }
  return 0;
}

}  // namespace plan

std::string legality_violation(const GemmProblem& call, const GemmConfig& config,
                               const GpuInfo& device) {
  validate(call);
  // The rules judge what the kernels read: A and B copied into TMA-describable rows where the
  // caller's are not (plan/operand_copy.hpp), swapped where the configuration says so
  // (plan/swap_ab.hpp).
  const GemmProblem problem = plan::kernel_problem(call, config);
  const KernelFields fields = plan::kernel_fields(problem, config);
  if (auto why = plan::kernel_violation(problem, fields, device); !why.empty()) return why;
  return plan::preference_violation(problem, config, device);
}

}  // namespace autogemm
