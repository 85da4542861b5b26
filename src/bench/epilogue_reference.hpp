#pragma once
// The fused epilogue in float64 on the host (autogemm/epilogue.hpp), over the float64 product
// of bench::reference_gemm: what the GPU tests and `bench --epilogue` check our fused kernels,
// the unfused pair and cuBLASLt's epilogues against.
#include <cstdint>
#include <vector>

#include "autogemm/epilogue.hpp"

namespace autogemm::bench {

double activation_reference(Activation a, double x);

// The vectors of one call, as doubles (empty where the epilogue has none).
struct EpilogueVectors {
  std::vector<double> bias, row_scale, col_scale;
};

// `d`: on entry the product A B (M x N, ld N); on exit act(alpha * AB * row_scale[m] *
// col_scale[n] + bias[n]) + beta * C, C (M x N, ld `ldc`) read when beta != 0. Gated: M x N / 2,
// act(gate) * up + beta * C from the interleaved columns (autogemm/epilogue.hpp).
void apply_epilogue_reference(const Epilogue& e, const EpilogueVectors& v, int64_t m, int64_t n,
                              double alpha, double beta, const std::vector<double>& c, int64_t ldc,
                              std::vector<double>& d);

}  // namespace autogemm::bench
