#include "runtime/tail_split.hpp"

#include <fmt/format.h>

#include <algorithm>

#include "kernels/sm90/tail_split_params.cuh"
#include "runtime/cuda_check.hpp"
#include "runtime/finish_output.hpp"
#include "runtime/simple_launch.hpp"

namespace autogemm::runtime {

namespace {

size_t partial_bytes(const GemmConfig& c, int64_t cta_tiles, int splits) {
  return size_t(cta_tiles) * size_t(splits) * size_t(c.block_m) * size_t(c.block_n) * sizeof(float);
}

}  // namespace

TailWorkspace allocate_tail_workspace(const GemmConfig& c, int64_t cta_tiles, int splits,
                                      cudaStream_t stream) {
  TailWorkspace w;
  w.cta_tiles = cta_tiles;
  w.splits = splits;
  const size_t partials = partial_bytes(c, cta_tiles, splits);   // a multiple of 256 B
  void* memory = nullptr;
  cuda_check(cudaMallocAsync(&memory, partials + size_t(cta_tiles) * 2 * sizeof(int), stream),
             "cudaMallocAsync(tail-split workspace)");
  w.partials = static_cast<float*>(memory);
  w.coords = reinterpret_cast<int*>(static_cast<unsigned char*>(memory) + partials);
  return w;
}

void finish_tail_split(const GemmProblem& p, const GemmOperands& o, const GemmConfig& c,
                       const TailWorkspace& w, cudaStream_t stream) {
  TailSplitReduceParams params{};
  params.partials = w.partials;
  params.coords = w.coords;
  params.tiles = static_cast<int>(w.cta_tiles);
  params.splits = w.splits;
  params.block_m = c.block_m;
  params.block_n = c.block_n;
  constexpr int kThreads = 256;
  // About one float4 per thread and range: 128 x 128 tiles take 16 blocks each.
  params.blocks_per_tile = std::max(1, c.block_m * c.block_n / 4 / kThreads);
  params.m = p.m;
  params.n = p.n;
  params.out = finish_output_params(p, o);
  SimpleGrid grid;
  grid.block_x = kThreads;
  grid.grid_x = static_cast<unsigned>(w.cta_tiles * params.blocks_per_tile);
  launch_simple_kernel("sm90/tail_split_reduce.cuh", "autogemm_tail_split_reduce", grid, &params,
                       stream,
                       fmt::format("tail-split reduce {} tiles x {} ranges", w.cta_tiles, w.splits));
  cuda_check(cudaFreeAsync(w.partials, stream), "cudaFreeAsync(tail-split workspace)");
}

}  // namespace autogemm::runtime
