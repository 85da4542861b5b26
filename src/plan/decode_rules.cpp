// The rules of the decode family (config.instruction = mma, kernels/sm90/decode_kernel.cuh),
// declared in rules.hpp beside the tile family's. Every rule names the field, its value and the
// limit; the first broken rule is the answer.
#include <fmt/format.h>

#include "kernels/sm90/fp8_scales.cuh"
#include "plan/rules.hpp"

namespace autogemm::plan {

namespace {

constexpr int kChunkBytes = 64;   // B's bytes per row that one 4-lane group loads (16 B a lane)

// Fields of the tile family that the decode kernel does not have: each must keep the value
// GemmConfig::parse gives a "mma ..." text.
std::string foreign_field_violation(const GemmConfig& c) {
  auto no = [](const std::string& field, const std::string& why) {
    return fmt::format("{} with instruction = mma: {}; leave the token out", field, why);
  };
  if (c.num_consumers != 1)
    return no(fmt::format("num_consumers = {}", c.num_consumers),
              "the decode family's CTA is four warps, not warpgroups");
  if (c.persistent) return no("persistent", "the decode family runs one CTA per work item");
  if (c.raster_group != 1 || c.raster_order != RasterOrder::along_m)
    return no(fmt::format("raster group {}", c.raster_group),
              "the decode family orders its CTAs itself (rows of A fastest)");
  if (c.cluster_m != 1 || c.cluster_n != 1 || c.multicast != Multicast::none)
    return no(fmt::format("cluster {}x{}", c.cluster_m, c.cluster_n),
              "the decode family uses no clusters");
  if (c.promotion_buffers != 1 || c.ordered_issue)
    return no("pb/oi", "FP8 promotion schemes belong to the wgmma family");
  if (c.n_tail_kernel) return no("ntk", "the decode family has no n-tail kernel");
  if (c.pingpong) return no("pp", "the decode family has no consumer warpgroups to take turns");
  if (c.stream_k) return no("stk", "the decode family splits K by split_k, one CTA per split");
  return {};
}

std::string type_violation(const GemmProblem& p, const GpuInfo& device) {
  if (device.cc != ComputeCapability{9, 0})
    return fmt::format("instruction = mma: the decode kernel is built for sm_90a; {} is {}",
                       device_label(device), arch_label(device));
  const DType in = p.a_type;
  if (in != DType::bf16 && in != DType::fp16 && in != DType::e4m3)
    return fmt::format("a_type = {}: the decode family takes bf16, fp16 or e4m3 (mma.sync)",
                       to_string(in));
  if (p.b_type != in)
    return fmt::format("b_type = {} with a_type = {}: the decode family multiplies equal types",
                       to_string(p.b_type), to_string(in));
  if (in == DType::e4m3 && p.scaling != Scaling::block_1x128_128x128)
    return fmt::format("scaling = {}: the decode family's FP8 is block-scaled (1x128 A, "
                       "128x128 B); per-tensor FP8 runs on the wgmma family",
                       to_string(p.scaling));
  if (p.d_type != DType::bf16 && p.d_type != DType::fp16 && p.d_type != DType::fp32)
    return fmt::format("d_type = {}: the decode family writes bf16, fp16 or fp32",
                       to_string(p.d_type));
  if (p.epilogue.gated)
    return "epilogue.gated: the decode family's lanes store single elements, not the gate and up "
           "pairs a gated output needs (the tile family runs it)";
  if (p.layout != Layout::nt)
    return fmt::format("layout = {}: the decode family reads A and B K-major (layout nt): each "
                       "lane loads 16 contiguous bytes of K",
                       to_string(p.layout));
  if (p.n > (int64_t(1) << 30) || p.k > (int64_t(1) << 30))
    return fmt::format("{} x {}: the decode kernel bakes N and K in as int", p.n, p.k);
  return {};
}

// 16-byte loads: K, and the distance between rows, whole 16-byte vectors.
std::string alignment_violation(const GemmProblem& p) {
  const int vector = 16 / dtype_bytes(p.a_type);
  if (p.k % vector != 0)
    return fmt::format("k = {}: the decode family loads rows in 16-byte vectors, so K must be a "
                       "multiple of {} {} elements",
                       p.k, vector, to_string(p.a_type));
  for (const auto& [name, ld] : {std::pair{"lda", p.lda_or_packed()}, std::pair{"ldb", p.ldb_or_packed()}})
    if (ld % vector != 0)
      return fmt::format("{} = {} elements: the decode family's 16-byte loads need rows that are "
                         "16-byte aligned (a multiple of {} elements)",
                         name, ld, vector);
  return {};
}

std::string shape_violation(const GemmProblem& p, const GemmConfig& c) {
  if (c.block_m != 8 && c.block_m != 16 && c.block_m != 32)
    return fmt::format("block_m = {}: the decode family takes 8, 16 or 32 rows of A per CTA "
                       "(whole 8-wide mma.sync columns, at most 4 groups)",
                       c.block_m);
  if (c.block_n != 16 && c.block_n != 32 && c.block_n != 64)
    return fmt::format("block_n = {}: the decode family takes 16, 32 or 64 rows of B per CTA "
                       "(1, 2 or 4 warps of 16 rows; the other warps split K)",
                       c.block_n);
  const int chunk = decode_chunk_elements(p);
  const int step_multiple = p.scaling == Scaling::block_1x128_128x128 ? sm90::kScaleBlock : chunk;
  if (p.weight_format && (c.num_stages < 1 || c.num_stages > kWeightMaxStepsAhead))
    return fmt::format("num_stages = {} with weight_format = {}: packed weights travel in "
                       "registers, 1..{} steps ahead (the warp rings carry bf16 or fp8 B)",
                       c.num_stages, to_string(*p.weight_format), kWeightMaxStepsAhead);
  if (c.block_k < step_multiple || c.block_k % step_multiple != 0)
    return fmt::format("block_k = {}: the decode family's steps are whole {} {} ({}) of K",
                       c.block_k, step_multiple, to_string(p.a_type),
                       step_multiple == chunk ? "64-byte chunks of B" : "128-element scale blocks");
  if (c.num_stages < 1 || c.num_stages > kDecodeMaxStages)
    return fmt::format("num_stages = {}: the decode family takes 1 (steps loaded into registers) "
                       "or 2..{} (a per-warp cp.async ring of that many steps)",
                       c.num_stages, kDecodeMaxStages);
  if (c.num_stages > 1 && !p.weight_format && (c.block_k * dtype_bytes(p.a_type)) % 128 != 0)
    return fmt::format("block_k = {} with num_stages = {}: a warp ring's step of a row is whole "
                       "128-byte lines ({} bytes here), which its swizzle and ldmatrix need",
                       c.block_k, c.num_stages, c.block_k * dtype_bytes(p.a_type));
  // Registers only: a warp ring keeps one chunk's fragments, its steps wait in shared memory.
  if (const int vectors = decode_step_vectors(p, c);
      (c.num_stages == 1 || p.weight_format) && vectors > decode_max_step_vectors(p))
    return fmt::format("{}x{}x{}: a step keeps {} 16-byte vectors per lane in registers "
                       "(({} of B + {} of A) x {} chunks), more than {} (4 registers each)",
                       c.block_m, c.block_n, c.block_k, vectors,
                       p.weight_format ? fmt::format("2 rows x {} steps", c.num_stages + 1)
                                       : std::string("2 rows"),
                       decode_a_vectors(p) * c.block_m / 8, c.block_k / chunk,
                       decode_max_step_vectors(p));
  // Masked groups: a tile lies in one group (max_m is a multiple of 64, grouped.hpp).
  if (p.grouping == Grouping::masked && p.m % c.block_m != 0)
    return fmt::format("block_m = {} with masked groups of max_m = {}: a tile must not cross "
                       "into the next group",
                       c.block_m, p.m);
  const int64_t steps = (p.k + c.block_k - 1) / c.block_k;
  if (c.split_k < 1 || c.split_k > kMaxSplitK)
    return fmt::format("split_k = {}: must be 1..{} (the last split polls the others' flags with "
                       "one lane each)",
                       c.split_k, kMaxSplitK);
  if (c.split_k > steps)
    return fmt::format("split_k = {}: K = {} has only {} steps of {}; every split needs one",
                       c.split_k, p.k, steps, c.block_k);
  const int64_t work_items = (p.m + c.block_m - 1) / c.block_m *
                             ((p.n + c.block_n - 1) / c.block_n) * c.split_k;
  if (work_items > (int64_t(1) << 31) - 1)
    return fmt::format("{} CTAs: more than a one-dimensional grid holds", work_items);
  return {};
}

}  // namespace

int decode_ring_bytes(const GemmProblem& problem, const GemmConfig& config) {
  if (config.num_stages <= 1 || problem.weight_format) return 0;   // registers only
  // sm90/decode_kernel.cuh DecodeRing: per warp, num_stages x (16 rows of B + block_m of A) x
  // one step of K.
  const int row_bytes = config.block_k * dtype_bytes(problem.a_type);
  // Block-scaled FP8: each stage also holds its scales (B's and block_m rows of A's, one per
  // 128 elements of K), in whole 16-byte units.
  const int scale_floats = problem.scaling == Scaling::block_1x128_128x128
                               ? (1 + config.block_m) * (config.block_k / sm90::kScaleBlock)
                               : 0;
  const int stage_bytes = (16 + config.block_m) * row_bytes + (scale_floats * 4 + 15) / 16 * 16;
  return 4 * config.num_stages * stage_bytes;
}

bool decode_ring_fits(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device) {
  return decode_ring_bytes(problem, config) + kDecodeStaticSmemBytes <=
         device.smem_per_block_optin_bytes;
}

int decode_b_bits(const GemmProblem& problem) {
  if (!problem.weight_format) return 8 * dtype_bytes(problem.b_type);
  return *problem.weight_format == WeightFormat::int8_channel ? 8 : 4;
}

int decode_chunk_elements(const GemmProblem& problem) {
  return kChunkBytes * 8 / decode_b_bits(problem);
}

int decode_a_vectors(const GemmProblem& problem) {
  return decode_chunk_elements(problem) / 4 * dtype_bytes(problem.a_type) / 16;
}

namespace {

// Weight-only: B's rows (two a row tile) for num_stages + 1 steps, A for one
// (sm90/decode_kernel.cuh weight_main_loop).
int weight_step_vectors(const GemmProblem& problem, const GemmConfig& config, int row_tiles) {
  const int chunks = config.block_k / decode_chunk_elements(problem);
  return (2 * row_tiles * (config.num_stages + 1) + decode_a_vectors(problem) * config.block_m / 8) *
         chunks;
}

}  // namespace

int decode_row_tiles(const GemmProblem& problem, const GemmConfig& config) {
  if (!problem.weight_format || config.block_n < 32) return 1;
  const int limit = (*problem.weight_format == WeightFormat::mxfp4 ? kWeightTwoTileMaxVectorsMxfp4
                                                                   : kWeightTwoTileMaxVectors) -
                    (config.split_k > 1 ? kWeightTwoTileSplitVectors : 0);
  return weight_step_vectors(problem, config, 2) <= limit ? 2 : 1;
}

int decode_step_vectors(const GemmProblem& problem, const GemmConfig& config) {
  if (problem.weight_format)
    return weight_step_vectors(problem, config, decode_row_tiles(problem, config));
  const int chunks = config.block_k / decode_chunk_elements(problem);
  return (2 + config.block_m / 8) * chunks;
}

int decode_max_step_vectors(const GemmProblem& problem) {
  return problem.weight_format ? kWeightMaxStepVectors : kDecodeMaxStepVectors;
}

std::string decode_violation(const GemmProblem& problem, const KernelFields& fields,
                             const GpuInfo& device) {
  const GemmConfig& config = fields.config;
  if (fields.warp_specialized != KernelFields{}.warp_specialized ||
      fields.load_path != LoadPath::tma)
    return "instruction = mma: the technique ladder's switches belong to the wgmma family";
  if (auto why = foreign_field_violation(config); !why.empty()) return why;
  if (auto why = type_violation(problem, device); !why.empty()) return why;
  if (auto why = alignment_violation(problem); !why.empty()) return why;
  if (auto why = shape_violation(problem, config); !why.empty()) return why;
  if (const int bytes = decode_ring_bytes(problem, config);
      !decode_ring_fits(problem, config, device))
    return fmt::format("{}x{}x{} s{}: four warp rings of {} B each ({} B) and the kernel's own "
                       "{} B exceed the {} B a CTA may have on {}",
                       config.block_m, config.block_n, config.block_k, config.num_stages,
                       bytes / 4, bytes, kDecodeStaticSmemBytes,
                       device.smem_per_block_optin_bytes, device_label(device));
  return {};
}

}  // namespace autogemm::plan
