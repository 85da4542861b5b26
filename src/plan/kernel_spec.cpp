// make_spec: a configuration -> everything one call launches (include/autogemm/kernel_spec.hpp).
// The rules are applied first; after that nothing below can fail.
#include "plan/kernel_spec.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "autogemm/errors.hpp"
#include "kernels/sm90/fp8_scales.cuh"
#include "kernels/sm90/scale_transpose_params.cuh"
#include "kernels/sm90/stream_k.cuh"
#include "plan/n_tail.hpp"
#include "plan/operand_copy.hpp"
#include "plan/rules.hpp"
#include "plan/swap_ab.hpp"

namespace autogemm {

std::string_view to_string(LoadPath p) { return p == LoadPath::tma ? "tma" : "threads"; }

std::string describe(const VendorAlgo& a) {
  return fmt::format("algo {} tile {} stages {} splitk {} reduction {} swizzle {} custom {} "
                     "inner {} cluster {}", a.algo_id, a.tile_id, a.stages_id, a.splitk_num,
                     a.reduction_scheme, a.cta_swizzling, a.custom_option, a.inner_shape_id,
                     a.cluster_shape_id);
}
std::string_view to_string(StorePath p) {
  return p == StorePath::tma ? "tma" : p == StorePath::staged ? "staged" : "threads";
}

namespace plan {

namespace {

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

int64_t a_scale_k_blocks(const GemmProblem& p) { return ceil_div(p.k, sm90::kScaleBlock); }

KernelLaunch make_launch(const GemmProblem& problem, int64_t first_column,
                         const KernelFields& fields, const LadderSwitches& switches,
                         const GpuInfo& device) {
  const GemmConfig& c = fields.config;
  KernelLaunch k;
  k.problem = problem;
  k.first_column = first_column;
  k.fields = fields;
  k.text = describe(fields);
  // The epilogue is compiled in (its vectors' types and the activation), so it selects the
  // kernel as much as the types do.
  k.identity = fmt::format("{}|{}|{}|{}|{}|n{}|k{}|{}|{}|{}", to_string(problem.a_type),
                           to_string(problem.b_type), to_string(problem.d_type),
                           to_string(problem.layout), to_string(problem.scaling), problem.n,
                           problem.k, k.text, to_string(problem.grouping),
                           kernel_epilogue(problem).token());
  if (problem.weight_format) k.identity += fmt::format("|{}", to_string(*problem.weight_format));
  if (problem.signal_bands > 0) k.identity += "|band-signals";
  k.cluster_size = c.cluster_m * c.cluster_n;
  k.work_items = cluster_work_items(problem, c);
  if (c.instruction == Instruction::mma) {
    // The decode family: four warps, plain loads or per-warp cp.async rings (no tensor maps),
    // one CTA per work item (sm90/decode_kernel.cuh).
    k.threads_per_cta = 128;
    k.smem_bytes = decode_ring_bytes(problem, c);
    k.grid_ctas = k.work_items;
    return k;
  }
  k.threads_per_cta = 128 * (c.num_consumers + (fields.warp_specialized ? 1 : 0));
  k.smem_bytes = gemm_smem_bytes(problem, fields);
  for (const NamedTmaBox& box : gemm_tma_boxes(problem, fields)) {
    const TmaDescription& d = box.description;
    k.tensor_maps.push_back({box.operand.front(), int64_t(d.global_dims[0]),
                             int64_t(d.global_dims[1]),
                             int64_t(d.global_strides[0]) / d.elem_bytes, int(d.box_dims[0]),
                             int(d.box_dims[1]),
                             d.swizzle == Swizzle::none ? 0 : swizzle_bytes(d.swizzle), box.tail});
  }
  // Clusters running at once: every SM once (these configurations fill an SM's shared
  // memory, so one CTA each), or one per work item; the ladder may cap the CTAs.
  int64_t ctas = c.persistent ? device.sm_count : k.work_items * k.cluster_size;
  if (switches.max_ctas > 0) ctas = std::min<int64_t>(ctas, switches.max_ctas);
  const int64_t slots = std::max<int64_t>(1, ctas / k.cluster_size);
  // Stream-K: every slot takes a run, however few the tiles.
  k.grid_ctas = (c.stream_k ? slots : std::min(k.work_items, slots)) * k.cluster_size;
  if (c.stream_k)
    k.work_items = sm90::stream_k_work_items(int(k.work_items), int(slots),
                                             int(ceil_div(problem.k, c.block_k)));
  return k;
}

}  // namespace

int64_t cluster_work_items(const GemmProblem& p, const GemmConfig& c) {
  // Grouped: the tiles over all stored rows (masked: each group's rows start a tile); the kernel
  // skips those without valid rows.
  const int64_t m_tiles = p.grouping == Grouping::masked ? p.num_groups * ceil_div(p.m, c.block_m)
                                                         : ceil_div(p.stored_rows(), c.block_m);
  return ceil_div(m_tiles, c.cluster_m) *
         ceil_div(ceil_div(p.n, c.block_n), c.cluster_n) * c.split_k;
}

bool a_scales_k_block_major(const GemmProblem& p, const GemmConfig& c) {
  // Not for grouped problems: their A-scale rows are the stored rows, which the copy does not
  // know (and a MoE layer's few rows per group read few scale rows per tile).
  // Nor for swapped operands: the kernel's scale warp reads the call's A scales as its columns'.
  return c.instruction == Instruction::wgmma && !c.swap_ab &&
         p.scaling == Scaling::block_1x128_128x128 &&
         p.grouping == Grouping::none && p.m >= kTransposedAScalesMinM &&
         int64_t(c.block_m) * a_scale_k_blocks(p) * int64_t(sizeof(float)) >= kL1ScaleRowsBytes;
}

SplitKWorkspaceLayout split_k_layout(const GemmProblem& p, const GemmConfig& c, int64_t slots) {
  // One ready flag per (CTA work item, consumer): the scheduler's items over the cluster-padded
  // tile grid, each a (tile, split) pair; one counter per tile and consumer.
  SplitKWorkspaceLayout w;
  if (c.stream_k) {
    const int tiles = int(cluster_work_items(p, c));   // one CTA a cluster (the rules)
    const int k_blocks = int(ceil_div(p.k, c.block_k));
    const int shared = sm90::stream_k_tiles(tiles, int(slots));
    if (shared == 0) return w;
    w.counters = int64_t(shared) * c.num_consumers;
    w.flags = w.counters * sm90::stream_k_max_pieces(tiles, int(slots), k_blocks);
    w.partial_floats = w.flags * int64_t(c.rows_per_consumer()) * c.block_n;
    return w;
  }
  if (c.split_k <= 1) return w;
  if (c.instruction == Instruction::mma) {
    // The decode family: one counter per CTA tile, split_k slots of block_m x block_n
    // (sm90/decode_kernel.cuh decode_sum_splits).
    w.counters = cluster_work_items(p, c) / c.split_k;
    w.flags = w.counters * c.split_k;
    w.partial_floats = w.flags * int64_t(c.block_m) * c.block_n;
    return w;
  }
  w.flags = cluster_work_items(p, c) * c.cluster_m * c.cluster_n * c.num_consumers;
  w.counters = w.flags / c.split_k;
  w.partial_floats = w.flags * int64_t(c.rows_per_consumer()) * c.block_n;
  return w;
}

std::string describe(const KernelFields& f) {
  std::string s = f.config.describe();
  if (!f.warp_specialized) s += " no-ws";
  if (f.load_path == LoadPath::threads) s += " threads-load";
  if (f.store_path == StorePath::threads) s += " threads-store";
  if (f.store_path == StorePath::staged) s += " staged-store";
  if (f.launch_dependents) s += " pdl-primary";
  if (f.waits_for_primary) s += " pdl-wait";
  return s;
}

KernelSpec make_spec(const GemmProblem& call, const GemmConfig& config, const GpuInfo& device,
                     std::string reason, const LadderSwitches& switches) {
  validate(call);
  check_memory(call, device);
  KernelSpec spec;
  spec.problem = call;
  spec.config = config;
  spec.text = config.describe();
  spec.reason = std::move(reason);
  if (config.instruction == Instruction::vendor) {
    spec.vendor = true;
    return spec;
  }
  // The kernels read A and B in rows TMA can describe: copies where the caller's are not; a
  // swapped configuration's kernels compute D^T = B^T A^T (plan/swap_ab.hpp).
  const GemmProblem problem = kernel_problem(call, config);
  spec.copy_a = operand_copy_a(call);
  spec.copy_b = operand_copy_b(call);
  for (const OperandCopy* copy : {&spec.copy_a, &spec.copy_b})
    if (copy->active())
      spec.reason += fmt::format("; {} copied into rows of {} elements first ({} = {} elements: "
                                 "TMA needs row strides that are a multiple of 16 bytes)",
                                 copy == &spec.copy_a ? "A" : "B", copy->padded_ld,
                                 copy == &spec.copy_a ? "lda" : "ldb", copy->source_ld);
  if (switches.max_ctas < 0)
    throw InvalidArgument("max_ctas", std::to_string(switches.max_ctas),
                          "must be >= 0 (0 = no cap)");
  const KernelFields fields = kernel_fields(problem, config, switches);
  if (auto why = kernel_violation(problem, fields, device); !why.empty())
    throw InvalidArgument("config", spec.text, why);
  // Why D is staged for the threads (a swapped configuration's register store is its own: the
  // planner's reason names it).
  if (fields.store_path == StorePath::staged) {
    std::vector<std::string> why;
    if (d_rows_end_mid_chunk(problem))
      why.push_back(fmt::format("n = {} {} ends rows mid 16-byte chunk", problem.n,
                                to_string(problem.d_type)));
    if (auto stride = tma_store_incompatibility(problem); !stride.empty())
      why.push_back(std::move(stride));
    spec.reason += fmt::format("; D staged and stored by the threads ({})", fmt::join(why, "; "));
  }
  if (config.n_tail_kernel) {
    const NTailSplit split = split_n_tail(problem, fields);
    spec.kernels.push_back(make_launch(split.main_problem, 0, split.main_fields, switches, device));
    spec.kernels.push_back(
        make_launch(split.tail_problem, split.main_columns, split.tail_fields, switches, device));
  } else {
    spec.kernels.push_back(make_launch(problem, 0, fields, switches, device));
  }
  const KernelLaunch& main_kernel = spec.kernels.front();
  spec.split_k =
      split_k_layout(problem, config, main_kernel.grid_ctas / main_kernel.cluster_size);
  spec.a_scales_k_block_major = a_scales_k_block_major(problem, config);
  if (spec.a_scales_k_block_major)
    spec.a_scale_copy_bytes =
        a_scale_k_blocks(problem) * scale_transpose_ld(problem.m) * int64_t(sizeof(float));
  return spec;
}

}  // namespace plan

KernelSpec make_kernel_spec(const GemmProblem& problem, const GemmConfig& config,
                            const GpuInfo& device) {
  return plan::make_spec(problem, config, device, "configuration given by the caller");
}

}  // namespace autogemm
