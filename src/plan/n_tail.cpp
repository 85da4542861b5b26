#include "plan/n_tail.hpp"

#include <fmt/format.h>

#include "plan/rules.hpp"

namespace autogemm::plan {

namespace {
// The tail kernel's block_n: the remainder rounded up to the 16-column step of the planner's
// tile widths (a wgmma n multiple of 8 would do; 16 keeps the tail on the shapes the rest of
// the family is measured with).
int tail_block_n(int64_t columns) { return static_cast<int>((columns + 15) / 16 * 16); }
}  // namespace

int64_t n_tail_columns(const GemmProblem& problem, const GemmConfig& config) {
  return config.block_n > 0 ? problem.n % config.block_n : 0;
}

NTailSplit split_n_tail(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  NTailSplit s;
  const int64_t tail_columns = n_tail_columns(problem, config);
  s.main_columns = problem.n - tail_columns;
  // Both kernels index D, C and (MN-major) B with the full call's leading dimensions.
  GemmProblem sub = problem;
  sub.lda = problem.lda_or_packed();
  sub.ldb = problem.ldb_or_packed();
  sub.ldc = problem.ldc_or_packed();
  sub.ldd = problem.ldd_or_packed();
  s.main_problem = sub;
  s.main_problem.n = s.main_columns;
  s.tail_problem = sub;
  s.tail_problem.n = tail_columns;
  s.main_fields = fields;
  s.main_fields.config.n_tail_kernel = false;
  s.main_fields.launch_dependents = true;
  s.tail_fields = s.main_fields;
  s.tail_fields.launch_dependents = false;
  s.tail_fields.waits_for_primary = true;
  GemmConfig& tail = s.tail_fields.config;
  tail.block_n = tail_block_n(tail_columns);
  // One tile per CTA: the hardware hands each the next SM that frees up.
  tail.persistent = false;
  tail.cluster_m = tail.cluster_n = 1;
  tail.multicast = Multicast::none;
  return s;
}

std::string n_tail_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& config = fields.config;
  if (!config.n_tail_kernel) return {};
  const int64_t tail = n_tail_columns(problem, config);
  if (tail == 0 || tail > config.block_n / 2 || problem.n < config.block_n)
    return fmt::format("n_tail_kernel with N = {}, block_n = {}: the last column of tiles must "
                       "hold 1 .. block_n / 2 = {} columns (it holds {}) after at least one "
                       "whole one",
                       problem.n, config.block_n, config.block_n / 2, tail);
  if (d_needs_thread_stores(problem))
    return fmt::format("n_tail_kernel with N = {} {}, ldd = {}: D's rows end inside a 16-byte "
                       "chunk or are a stride TMA cannot store, so such calls stage D and store it "
                       "by the threads, which the n-tail kernel does not do",
                       problem.n, to_string(problem.d_type), problem.ldd_or_packed());
  if (!config.persistent || fields.load_path != LoadPath::tma ||
      fields.store_path != StorePath::tma)
    return fmt::format("n_tail_kernel with persistent = {}, load/store paths {}/{}: the main "
                       "kernel must be persistent with TMA loads and stores (the tail kernel's "
                       "CTAs wait for SMs that persistent CTAs free)",
                       config.persistent, to_string(fields.load_path),
                       to_string(fields.store_path));
  if (config.split_k > 1)
    return fmt::format("n_tail_kernel with split_k = {}: the n-tail kernel is for whole-K tiles "
                       "(one K range per tile)",
                       config.split_k);
  if (problem.scaling == Scaling::block_1x128_1x128)
    return "n_tail_kernel with 1x128 B scales: not built (the main kernel's tiles clip at N)";
  if (problem.scaling == Scaling::block_1x128_128x128 && (problem.n - tail) % 128 != 0)
    return fmt::format("n_tail_kernel with block scales and block_n = {}: the tail starts at "
                       "column {}, inside a 128-column B scale block; it must start on one",
                       config.block_n, problem.n - tail);
  return {};
}

bool n_tail_offered(const GemmProblem& problem, GemmConfig config) {
  config.n_tail_kernel = true;
  const KernelFields fields = kernel_fields(problem, config);
  if (!n_tail_violation(problem, fields).empty()) return false;
  // Ordered issue below block_n = 128 measured slow (gemm_search.cpp), and so did the tail
  // kernel it gives a 256-row tile: 4096 x 2112 x 7168, 256x128 oi ntk 127 us against
  // 128x128 pb2 ntk 109 on the H100, though the model ranks it first (two exact waves).
  if (config.ordered_issue && split_n_tail(problem, fields).tail_fields.config.block_n < 128)
    return false;
  // FP8 only, for now. On BF16 the model ranked the n-tail kernel first on three suite rows
  // with tiles that then measured 3-32% slower than the choices before (128x256 ntk with a
  // 16-column tail: 215 against 163 us): it prices a tail tile as its
  // share of the columns, not at the lower efficiency of a narrow wgmma.
  return problem.a_type == DType::e4m3 || problem.a_type == DType::e5m2;
}

}  // namespace autogemm::plan
