// autogemm::grouped_gemm(): checks the call, takes the spec (planned once per problem, or
// forced) and launches the tile family over every group at once (include/autogemm/grouped.hpp).
#include "autogemm/grouped.hpp"

#include <fmt/format.h>

#include <memory>

#include "autogemm/errors.hpp"
#include "plan/rules.hpp"
#include "runtime/call_spec.hpp"
#include "runtime/epilogue_operands.hpp"
#include "runtime/launch.hpp"
#include "runtime/weight_operands.hpp"

namespace autogemm {

namespace {

void check_grouped_operands(const GemmProblem& p, const GroupedOperands& o) {
  auto null = [](const char* name, const char* rule) {
    throw InvalidArgument(name, "nullptr", rule);
  };
  if (!o.a) null("a", "must point to A in device memory");
  if (!o.b) null("b", "must point to B ([groups, N, K]) in device memory");
  if (!o.d) null("d", "must point to D in device memory");
  if (p.grouping == Grouping::contiguous && !o.group_index)
    null("group_index", "the contiguous layout needs each row's group (m int32 in device memory)");
  if (p.scaling != Scaling::none && (!o.scale_a || !o.scale_b))
    null(!o.scale_a ? "scale_a" : "scale_b",
         "block-scaled FP8 needs A's 1x128 and every group's 128x128 scales");
  if (p.grouping == Grouping::masked && !o.masked_m)
    null("masked_m", "the masked layout needs each group's valid rows (num_groups int32 in "
                     "device memory)");
}

// One group's run in the contiguous layout: its rows padded so no tile holds two groups.
int64_t padded_run(std::span<const int64_t> group_rows, size_t g) {
  if (group_rows[g] < 0)
    throw InvalidArgument(fmt::format("group_rows[{}]", g), std::to_string(group_rows[g]),
                          "must be >= 0");
  return (group_rows[g] + kGroupedRowAlignment - 1) / kGroupedRowAlignment * kGroupedRowAlignment;
}

}  // namespace

GemmReport grouped_gemm(const GemmProblem& problem, const GroupedOperands& operands,
                        cudaStream_t stream, const GemmOptions& options) {
  if (problem.grouping == Grouping::none)
    throw InvalidArgument("problem.grouping", "none",
                          "grouped_gemm() needs grouping = contiguous or masked (one GEMM: "
                          "gemm())");
  validate(problem);
  check_grouped_operands(problem, operands);
  GemmOperands dense;
  dense.a = operands.a;
  dense.b = operands.b;
  dense.d = operands.d;
  dense.alpha = operands.alpha;
  dense.scale_a = operands.scale_a;
  dense.scale_b = operands.scale_b;
  dense.bias = operands.bias;
  dense.row_scale = operands.row_scale;
  dense.col_scale = operands.col_scale;
  dense.b_scales = operands.b_scales;
  dense.b_zeros = operands.b_zeros;
  runtime::check_weight_operands(problem, dense);
  runtime::check_epilogue_operands(problem, dense);
  runtime::GroupArrays groups;
  groups.group_index = operands.group_index;
  groups.masked_m = operands.masked_m;
  return runtime::launch_grouped(problem, dense, groups, stream, options, "grouped_gemm()");
}

namespace runtime {

GemmReport launch_grouped(const GemmProblem& problem, const GemmOperands& operands,
                          const GroupArrays& groups, cudaStream_t stream,
                          const GemmOptions& options, const char* what) {
  if (options.autotune > 0)
    throw InvalidArgument("options.autotune", std::to_string(options.autotune),
                          fmt::format("{} runs the planner's choice or options.config; timing "
                                      "candidates would need the groups' sizes, which live on "
                                      "the device",
                                      what));
  GemmOptions planning = options;
  planning.autotune = 0;
  const std::shared_ptr<const KernelSpec> spec =
      call_spec(call_device(options), problem, operands, stream, planning);
  // cuBLASLt has no grouped form here: where our kernel cannot run, say why.
  if (spec->vendor)
    throw InvalidArgument("problem",
                          fmt::format("grouped {} x {} x {} ({} groups, {})", problem.m,
                                      problem.n, problem.k, problem.num_groups,
                                      to_string(problem.grouping)),
                          fmt::format("no autogemm kernel serves it: {}", spec->reason));
  if (auto why = plan::operand_violation(*spec, operands); !why.empty())
    throw InvalidArgument("operands", what, why);
  launch(*spec, operands, stream, groups);
  GemmReport report;
  report.config = spec->config;
  report.reason = spec->reason;
  return report;
}

}  // namespace runtime

int64_t contiguous_rows(std::span<const int64_t> group_rows) {
  int64_t rows = 0;
  for (size_t g = 0; g < group_rows.size(); ++g) rows += padded_run(group_rows, g);
  return rows;
}

std::vector<int64_t> check_contiguous_groups(const GemmProblem& problem,
                                             std::span<const int64_t> group_rows) {
  if (problem.grouping != Grouping::contiguous)
    throw InvalidArgument("problem.grouping", std::string(to_string(problem.grouping)),
                          "check_contiguous_groups is for the contiguous layout");
  if (int64_t(group_rows.size()) != problem.num_groups)
    throw InvalidArgument("group_rows", fmt::format("{} entries", group_rows.size()),
                          fmt::format("must have one entry per group ({})", problem.num_groups));
  std::vector<int64_t> starts;
  starts.reserve(group_rows.size());
  int64_t row = 0;
  for (size_t g = 0; g < group_rows.size(); ++g) {
    starts.push_back(row);
    row += padded_run(group_rows, g);
    if (row > problem.m)
      throw InvalidArgument(fmt::format("group_rows[{}]", g), std::to_string(group_rows[g]),
                            fmt::format("groups 0..{} padded to {} rows each take {} rows; A and "
                                        "D have m = {}",
                                        g, kGroupedRowAlignment, row, problem.m));
  }
  return starts;
}

std::vector<int32_t> contiguous_group_index(const GemmProblem& problem,
                                            std::span<const int64_t> group_rows) {
  const std::vector<int64_t> starts = check_contiguous_groups(problem, group_rows);
  std::vector<int32_t> index(size_t(problem.m), -1);
  for (size_t g = 0; g < starts.size(); ++g)
    for (int64_t r = 0; r < group_rows[g]; ++r) index[size_t(starts[g] + r)] = int32_t(g);
  return index;
}

}  // namespace autogemm
