// split_gemm's checks before anything is launched (split_checks.hpp).
#include "multi/split_checks.hpp"

#include <fmt/format.h>

#include "autogemm/errors.hpp"
#include "cuda/cuda_check.hpp"
#include "autogemm/plan.hpp"
#include "multi/split_plan.hpp"

namespace autogemm::multi {

namespace {

std::string shape_text(const GemmProblem& p) {
  return fmt::format("{}x{}x{} {} {} -> {} layout {} lda {} ldb {} ldd {}", p.m, p.n, p.k,
                     to_string(p.a_type), to_string(p.b_type), to_string(p.d_type),
                     to_string(p.layout), p.lda_or_packed(), p.ldb_or_packed(), p.ldd_or_packed());
}

std::string pointer_text(const void* p) { return p == nullptr ? "null" : fmt::format("{}", p); }

bool has_pieces(const SplitPlan& plan, int rank) {
  return !plan.chosen.pieces.at(std::size_t(rank)).empty();
}

}  // namespace

RankNeeds rank_needs(const SplitPlan& plan, int rank, const GemmOperands& operands) {
  RankNeeds needs;
  const bool computes = has_pieces(plan, rank);
  needs.inputs = computes && (plan.options.inputs == InputPlacement::replicated || rank == 0);
  needs.c = needs.inputs && operands.beta != 0.0f;
  needs.d = plan.options.output == OutputPlacement::root ? rank == 0 : computes;
  return needs;
}

std::string pointer_device_violation(const void* pointer, int device) {
  cudaPointerAttributes attributes{};
  const cudaError_t e = cudaPointerGetAttributes(&attributes, pointer);
  if (e != cudaSuccess) {
    cudaGetLastError();  // not sticky
    return fmt::format("is not memory CUDA knows ({})",
                       cuda_error_text(e, "cudaPointerGetAttributes"));
  }
  switch (attributes.type) {
    case cudaMemoryTypeManaged: return "";
    case cudaMemoryTypeDevice:
      return attributes.device == device
                 ? ""
                 : fmt::format("is memory of device {}; this rank computes on device {}",
                               attributes.device, device);
    case cudaMemoryTypeHost:
      return fmt::format("is pinned host memory; this rank computes on device {} and needs its "
                         "memory",
                         device);
    default:  // cudaMemoryTypeUnregistered: malloc'd or stack memory
      return fmt::format("is host memory CUDA does not know; this rank computes on device {} and "
                         "needs its memory",
                         device);
  }
}

void check_split_arguments(const GemmProblem& problem, const std::vector<GemmOperands>& operands,
                           const SplitPlan& plan, int comm_size, std::size_t local_ranks,
                           const std::vector<cudaStream_t>& streams) {
  validate(problem);
  const GemmProblem& planned = plan.problem;
  const bool same = problem.m == planned.m && problem.n == planned.n && problem.k == planned.k &&
                    problem.a_type == planned.a_type && problem.b_type == planned.b_type &&
                    problem.d_type == planned.d_type && problem.layout == planned.layout &&
                    problem.scaling == planned.scaling &&
                    problem.lda_or_packed() == planned.lda_or_packed() &&
                    problem.ldb_or_packed() == planned.ldb_or_packed() &&
                    problem.ldc_or_packed() == planned.ldc_or_packed() &&
                    problem.ldd_or_packed() == planned.ldd_or_packed();
  if (!same)
    throw InvalidArgument("plan", shape_text(planned),
                          fmt::format("was made for another problem than this call's ({})",
                                      shape_text(problem)));
  if (!plan.chosen.rejected.empty() || int(plan.chosen.pieces.size()) != plan.gpus())
    throw InvalidArgument("plan.chosen", std::string(to_string(plan.chosen.kind)),
                          "is not a runnable candidate: use the plan plan_split returned");
  if (comm_size != plan.gpus())
    throw InvalidArgument("communicator size", std::to_string(comm_size),
                          fmt::format("the plan splits the GEMM over {} GPUs (--gpus {}): the "
                                      "communicator must have that many ranks",
                                      plan.gpus(), plan.gpus()));
  if (operands.size() != local_ranks)
    throw InvalidArgument("operands", fmt::format("{} entries", operands.size()),
                          fmt::format("one per rank this process drives ({})", local_ranks));
  if (!streams.empty() && streams.size() != local_ranks)
    throw InvalidArgument("streams", fmt::format("{} entries", streams.size()),
                          fmt::format("none (each device's default stream) or one per rank this "
                                      "process drives ({})",
                                      local_ranks));
  for (std::size_t i = 1; i < operands.size(); ++i)
    if (operands[i].alpha != operands[0].alpha || operands[i].beta != operands[0].beta)
      throw InvalidArgument(fmt::format("operands[{}].alpha/beta", i),
                            fmt::format("{}/{}", operands[i].alpha, operands[i].beta),
                            fmt::format("every rank computes the same GEMM: must equal operands[0]'s "
                                        "{}/{}",
                                        operands[0].alpha, operands[0].beta));
  if (!operands.empty() && operands[0].beta != 0.0f && plan.options.inputs == InputPlacement::root &&
      plan.chosen.kind != SplitKind::none)
    throw InvalidArgument("operands.beta", fmt::format("{}", operands[0].beta),
                          "with inputs on the root (InputPlacement::root) only A and B are sent: "
                          "give C on every rank (inputs replicated) or beta = 0");
}

void check_split_operands(const std::vector<GemmOperands>& operands, const SplitPlan& plan,
                          const std::vector<MultiGpuComm::LocalRank>& ranks,
                          const std::vector<GpuInfo>& devices) {
  const bool fp8_scales = plan.problem.scaling != Scaling::none;
  for (std::size_t i = 0; i < ranks.size(); ++i) {
    const int rank = ranks[i].rank, device = ranks[i].device;
    const GemmOperands& o = operands[i];
    const RankNeeds needs = rank_needs(plan, rank, o);
    auto check = [&](const char* name, const void* pointer, bool needed) {
      if (!needed) return;
      const std::string argument = fmt::format("operands[{}].{} (rank {})", i, name, rank);
      if (pointer == nullptr)
        throw InvalidArgument(argument, "null",
                              fmt::format("the plan ({} split, inputs {}, output {}) needs it on "
                                          "this rank",
                                          to_string(plan.chosen.kind), to_string(plan.options.inputs),
                                          to_string(plan.options.output)));
      if (const std::string why = pointer_device_violation(pointer, device); !why.empty())
        throw InvalidArgument(argument, pointer_text(pointer), why);
    };
    check("a", o.a, needs.inputs);
    check("b", o.b, needs.inputs);
    check("scale_a", o.scale_a, needs.inputs && fp8_scales);
    check("scale_b", o.scale_b, needs.inputs && fp8_scales);
    check("c", o.c, needs.c);
    check("d", o.d, needs.d);
    for (const SplitPiece& piece : plan.chosen.pieces.at(std::size_t(rank))) {
      if (!piece.config) continue;
      const DType d_type =
          plan.chosen.kind == SplitKind::k ? plan.chosen.partial_type : plan.problem.d_type;
      const GemmProblem sub = piece_problem(plan.problem, piece, d_type);
      if (const std::string why = legality_violation(sub, *piece.config, devices[i]); !why.empty())
        throw InvalidArgument("plan", piece.config->describe(),
                              fmt::format("rank {}'s piece {}x{}x{} cannot run it on device {} "
                                          "({}): {}",
                                          rank, piece.rows(), piece.cols(), piece.depth(), device,
                                          devices[i].name, why));
    }
  }
}

}  // namespace autogemm::multi
