#pragma once
// `bench` with a fused epilogue (--bias, --activation, --row-scale, --col-scale; issue 50): the
// row's vectors, and the two calls ours is timed against besides cuBLASLt's own fused epilogue
// (runtime/cublaslt.hpp, where it has one): our plain GEMM alone (what fusing costs) and our
// plain GEMM followed by the epilogue as a kernel of its own (bench/unfused_epilogue.hpp: what
// fusing saves).
#include <cuda_runtime_api.h>

#include <cstdint>
#include <vector>

#include "autogemm/gemm.hpp"
#include "bench/epilogue_reference.hpp"
#include "bench/tensors.hpp"

namespace autogemm::bench {

struct EpilogueCase {
  DeviceBuffer bias, row_scale, col_scale;   // random; scales in [0.5, 1.5)
  EpilogueVectors host;                      // the same values, for the float64 reference
  DeviceBuffer d_unfused;                    // the plain GEMM's D, then the unfused epilogue's
  GemmProblem plain;                         // the problem without its epilogue
  GemmOperands plain_ops;                    // its operands: A, B (and scales) into d_unfused
};

// The vectors of `problem`'s epilogue (random from `seed`), set into `ours` (its A, B and
// scales are kept for the plain calls); d_unfused is poisoned.
EpilogueCase make_epilogue_case(const GemmProblem& problem, GemmOperands& ours, uint64_t seed);

// Our plain GEMM into d_unfused, with `options`.
void run_plain(const EpilogueCase& c, const GemmOptions& options, cudaStream_t stream);
// run_plain, then the epilogue over d_unfused as a second kernel (the unfused sequence).
void run_unfused(const EpilogueCase& c, const GemmProblem& problem, const GemmOptions& options,
                 cudaStream_t stream);

// The epilogue applied to the first `rows` rows of a plain float64 product (alpha = 1, beta =
// 0, as the bench runs every row).
void apply_epilogue_to_reference(const GemmProblem& problem, const EpilogueCase& c, int64_t rows,
                                 std::vector<double>& product);

}  // namespace autogemm::bench
