#include "bench/unfused_epilogue.hpp"

#include <algorithm>

#include "codegen/kernel_source.hpp"
#include "kernels/bench/unfused_epilogue_params.cuh"
#include "runtime/simple_launch.hpp"

namespace autogemm::bench {

void unfused_epilogue(const GemmProblem& p, const GemmOperands& o, cudaStream_t stream) {
  const Epilogue& e = p.epilogue;
  UnfusedEpilogueParams params{};
  params.d = o.d;
  params.rows = p.m;
  params.cols = p.n;
  params.ldd = p.ldd_or_packed();
  params.d_kind = codegen::out_kind(p.d_type);
  params.bias = e.bias ? o.bias : nullptr;
  params.bias_kind = e.bias && *e.bias == DType::bf16 ? 1 : 2;
  params.row_scale = e.row_scale ? o.row_scale : nullptr;
  params.col_scale = e.col_scale ? o.col_scale : nullptr;
  params.activation = int(e.activation);
  runtime::SimpleGrid grid;
  grid.grid_x = unsigned((p.n + 511) / 512);
  grid.grid_y = unsigned(std::min<int64_t>(p.m, 65535));
  grid.block_x = 256;
  runtime::launch_simple_kernel("bench/unfused_epilogue.cuh", "autogemm_unfused_epilogue", grid,
                                &params, stream, "unfused epilogue");
}

}  // namespace autogemm::bench
