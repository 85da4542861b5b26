#include "plan/swap_ab.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "plan/operand_copy.hpp"
#include "plan/rules.hpp"

namespace autogemm::plan {

namespace {

// The storage letters of the swapped operands (problem.hpp): the kernel's A is the call's B,
// stored N x K ('t') = the kernel's M x K ('n'); its B is the call's A, stored M x K ('n') =
// the kernel's N x K ('t').
Layout swapped_layout(Layout l) {
  switch (l) {
    case Layout::nt: return Layout::nt;
    case Layout::nn: return Layout::tt;
    case Layout::tt: return Layout::nn;
    case Layout::tn: return Layout::tn;
  }
  return l;
}

}  // namespace

GemmProblem swapped_problem(const GemmProblem& p) {
  GemmProblem s = p;
  s.m = p.n;
  s.n = p.m;
  s.a_type = p.b_type;
  s.b_type = p.a_type;
  s.layout = swapped_layout(p.layout);
  s.lda = p.ldb_or_packed();
  s.ldb = p.lda_or_packed();
  s.ldc = p.ldc_or_packed();
  s.ldd = p.ldd_or_packed();
  return s;
}

bool tma_stores_d_transposed(const GemmProblem& kernel_problem) {
  return !d_needs_thread_stores(swapped_problem(kernel_problem));
}

GemmProblem kernel_problem(const GemmProblem& call, const GemmConfig& config) {
  const GemmProblem padded = kernel_problem(call);
  return config.swap_ab ? swapped_problem(padded) : padded;
}

std::string swap_ab_violation(const GemmProblem& problem, const KernelFields& fields) {
  const GemmConfig& c = fields.config;
  if (!c.swap_ab) return {};
  if (c.instruction != Instruction::wgmma)
    return fmt::format("swap_ab with instruction = {}: only the tile family (wgmma) swaps "
                       "operands; the decode family already runs few rows of A along mma's N",
                       to_string(c.instruction));
  // Block-scaled FP8: the kernel's columns (the call's rows) take one scale each, which the
  // stage's scale slot holds where the unswapped kernel keeps its BLOCK_M row scales
  // (kernels/sm90/fp8_scale_copy.cuh produce_swapped_scales).
  if (problem.scaling == Scaling::block_1x128_128x128 && c.block_n > c.block_m)
    return fmt::format("swap_ab with block-scaled FP8, block_n = {} > block_m = {}: the block_n "
                       "scales of the call's rows take the stage's block_m row-scale slot",
                       c.block_n, c.block_m);
  // Two consumers with two promotion temporaries: ptxas (CUDA 13.0) took 34 s on 128x32x128
  // s8 c2 sk4 pb2 swap at K = 1024 (0.2 s with one temporary or one consumer); the planner's
  // swapped FP8 tiles were measured with one consumer (64x16 / 128x16 / 64x32 c1 pb2).
  if (dtype_bytes(problem.a_type) == 1 && c.num_consumers == 2 && c.promotion_buffers == 2)
    return "swap_ab with FP8, num_consumers = 2 and promotion_buffers = 2: ptxas takes ~34 s "
           "on such a tile at K = 1024; use num_consumers = 1 or promotion_buffers = 1";
  if (problem.grouping != Grouping::none)
    return fmt::format("swap_ab with grouping = {}: the groups are rows of A, which a swapped "
                       "kernel runs along N",
                       to_string(problem.grouping));
  if (c.n_tail_kernel)
    return "swap_ab with n_tail_kernel: the n-tail kernel splits the call's N, which a swapped "
           "kernel runs along M";
  if (fields.store_path == StorePath::staged)
    return "swap_ab with store_path = staged: D^T goes out by TMA in the caller's rows, or from "
           "the registers";
  return {};
}

bool swap_ab_offered(const GemmProblem& call) {
  // Row-band signals walk D's rows; a swapped kernel walks its columns (signal_violation).
  if (call.grouping != Grouping::none || call.signal_bands > 0) return false;
  if (call.m <= kSwapAbMaxM || weight_bound_middle(call)) return true;
  // Fitted rows only where TMA stores D^T (the threads' transposed stores cost 3.5-4.5 us a
  // 128-row tile, which these tiles repeat wave after wave).
  return dtype_bytes(call.a_type) == 2 && !d_needs_thread_stores(call) && call.m >= kSwapAbFitMinM &&
         call.m <= kSwapAbFitMaxM && call.n >= kSwapAbFitMinN && call.k >= kSwapAbFitMinK;
}

bool weight_bound(const GemmProblem& call) {
  const double b_bytes = double(call.num_groups) * call.n * call.k * dtype_bytes(call.b_type);
  return call.m <= kWeightBoundMaxM && b_bytes >= kWeightBoundMinShare * call.min_bytes();
}

bool weight_bound_middle(const GemmProblem& call) {
  if (call.grouping != Grouping::none || call.m <= kSwapAbMaxM || !weight_bound(call)) return false;
  const int64_t slab_rows = (call.m + kWgmmaSlabRows - 1) / kWgmmaSlabRows * kWgmmaSlabRows;
  const bool pads = double(slab_rows - call.m) >= kMiddleSwapMinPadShare * double(slab_rows);
  if (dtype_bytes(call.a_type) == 1) return pads && call.m <= kMiddleSwapFp8MaxM;
  return pads || call.m > 2 * kWgmmaSlabRows;
}

int middle_swap_consumers(const GemmProblem& call, const GemmConfig& config) {
  // Stream-K runs one consumer (stream_k_offered); past one wave it beats two (130 x 18432 x
  // 7168: 104.5 -> 81.6 us).
  if (config.stream_k || dtype_bytes(call.a_type) != 2 ||
      config.block_n <= kMiddleSwapOneConsumerMaxN)
    return 1;
  GemmConfig one_consumer = config;
  one_consumer.num_consumers = 1;
  const GemmProblem kernel = kernel_problem(call, one_consumer);
  return register_violation(kernel, kernel_fields(kernel, one_consumer)).empty() ? 2 : 1;
}

bool middle_swap_tile(const GemmProblem& call, const GemmConfig& config) {
  return config.swap_ab && config.block_n >= call.m && config.block_m == kMiddleSwapBlockM &&
         config.num_consumers == middle_swap_consumers(call, config);
}

void keep_middle_swap_tiles(const GemmProblem& call, std::vector<Candidate>& candidates) {
  if (!weight_bound_middle(call)) return;
  std::erase_if(candidates, [&](const Candidate& c) {
    return c.config.swap_ab && c.config.block_n < call.m;
  });
  const bool any = std::any_of(candidates.begin(), candidates.end(), [&](const Candidate& c) {
    return middle_swap_tile(call, c.config);
  });
  if (any)
    std::erase_if(candidates,
                  [&](const Candidate& c) { return !middle_swap_tile(call, c.config); });
}

}  // namespace autogemm::plan
