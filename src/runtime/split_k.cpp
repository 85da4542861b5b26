#include "runtime/split_k.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/sm90/split_k_params.cuh"
#include "runtime/finish_output.hpp"
#include "runtime/simple_launch.hpp"

namespace autogemm::runtime {

void split_k_reduce(const GemmProblem& p, const GemmOperands& o, const float* workspace,
                    int split_k, cudaStream_t stream) {
  SplitKReduceParams params{};
  params.workspace = workspace;
  params.m = p.m;
  params.n = p.n;
  params.workspace_ld = split_k_workspace_ld(p);
  params.split_k = split_k;
  params.out = finish_output_params(p, o);
  const long long pairs = p.m * ((p.n + 1) / 2);
  SimpleGrid grid;
  grid.block_x = 256;
  // A few waves of 256-thread blocks over 132 SMs; the loop strides over the rest.
  grid.grid_x = static_cast<unsigned>(std::clamp<long long>((pairs + 255) / 256, 1, 132 * 8));
  launch_simple_kernel("sm90/split_k_reduce.cuh", "autogemm_split_k_reduce", grid, &params, stream,
                       fmt::format("split-K reduce {} x {} x {} splits", p.m, p.n, split_k));
}

}  // namespace autogemm::runtime
