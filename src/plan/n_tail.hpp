#pragma once
// The n-tail kernel (GemmConfig::n_tail_kernel). When N is not a multiple of block_n, the last
// column of tiles holds only N mod block_n real columns, yet each of its tiles costs a whole
// tile's time. Where that remainder is at most half a tile, the main kernel computes the first
// N - (N mod block_n) columns, and a second kernel with narrow tiles (block_n rounded up to the
// remainder) computes the rest. The second one launches as a programmatic dependent: its CTAs
// take the SMs the main kernel's persistent CTAs free as they run out of tiles, so the narrow
// tiles fill the last wave instead of adding one.
// 4096 x 2112 x 7168 with 128 x 128 tiles: 544 tiles, 4.1 waves on 132 SMs (the fifth keeps 16
// SMs busy for a whole tile) become 512 tiles (3.9 waves) and 32 tiles of 128 x 64, each about
// half a tile's time, on the 16 SMs that finish a round early.
//
// One function splits the call, so the legality rules, the cost model and the launcher agree.
#include <cstdint>
#include <string>

#include "autogemm/config.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

struct NTailSplit {
  int64_t main_columns = 0;   // N - (N mod block_n): the tail's first column
  GemmProblem main_problem;   // n = main_columns; leading dimensions of the full call
  KernelFields main_fields;   // the call's configuration; it lets the tail kernel launch early
  GemmProblem tail_problem;   // n = N mod block_n
  KernelFields tail_fields;   // block_n rounded up to the remainder, one tile per CTA, no
                              // cluster, waits for the main kernel before it exits
};

// Columns of the last, partial column of tiles: N mod block_n (0 when block_n divides N).
int64_t n_tail_columns(const GemmProblem& problem, const GemmConfig& config);

// The two kernels of a configuration with n_tail_kernel (precondition: n_tail_violation is
// empty).
NTailSplit split_n_tail(const GemmProblem& problem, const KernelFields& fields);

// Empty when the configuration may use the n-tail kernel (or does not ask for it), else the
// rule it breaks. The two kernels' own fields must be legal too; kernel_violation (rules.cpp)
// checks those.
std::string n_tail_violation(const GemmProblem& problem, const KernelFields& fields);

// The planner offers the n-tail kernel as a variant of `config` wherever it is allowed
// (n_tail_violation of config with n_tail_kernel set is empty), except where the tail kernel
// would run ordered issue on a narrow tile (measured slow), and for FP8 inputs only (BF16's
// rows measured slower, n_tail.cpp); the cost model decides.
bool n_tail_offered(const GemmProblem& problem, GemmConfig config);

}  // namespace autogemm::plan
