#pragma once
// Each rank's shards of a tensor-parallel GEMM cut from one set of whole operands on GPU 0, and
// the block of the whole result each rank must hold (bench --tp, the tensor-parallel GPU tests).
// FP8: the whole A and B quantised once (1x128, 128x128) and their scales cut with them, which
// needs whole 128 x 128 blocks per rank (all-gather: N / world a multiple of 128; the others:
// K / world, which validate(TpProblem) requires).
#include <vector>

#include "autogemm/tensor_parallel.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

struct TpRankBuffers {
  DeviceBuffer a, b, d, scale_a, scale_b;   // on the rank's GPU, packed; d unwritten
  TpShards shards() const;
};

// Rank `rank`'s shards (on GPU `rank`) of the whole operands `whole` (on GPU 0, packed, nt).
TpRankBuffers cut_tp_rank(const TpProblem& problem, const GemmInputs& whole, int rank);

// The bytes of rank `rank`'s block of the whole D (M x N, packed) as that rank stores it.
std::vector<unsigned char> expected_tp_block(const TpProblem& problem,
                                             const std::vector<unsigned char>& whole, int rank);

}  // namespace autogemm::bench
