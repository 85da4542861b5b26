#pragma once
// How `bench` and `tune` read one suite row (m, n, k) into a problem, so a row means the same
// GEMM to both: --dtype and --layout, or with --wgrad the weight gradient dW (+)= dY^T X of the
// row (m = out features, n = in features, k = tokens; autogemm/wgrad.hpp), then --out-dtype and
// --accumulate (D += A B: C is D, beta 1).
#include <cstdint>
#include <string>

#include "autogemm/problem.hpp"

namespace autogemm::cli {

struct RowOptions {
  std::string dtype = "bf16";
  std::string layout = "nt";
  std::string out_dtype;     // empty: bf16 (fp16 for fp16 inputs)
  bool accumulate = false;
  bool wgrad = false;        // the row is a weight gradient: layout tn, fp32, accumulated
};

// --wgrad's rules: bf16, fp16 or fp8 inputs and fp32 output (empty is fp32). Throws
// InvalidArgument naming --dtype or --out-dtype.
void check_wgrad_types(const std::string& dtype, const std::string& out_dtype);

// The row's problem, not yet validated (a caller adds its epilogue first). Throws
// InvalidArgument naming --dtype, --layout or --out-dtype for a value it does not take.
GemmProblem row_problem(int64_t m, int64_t n, int64_t k, const RowOptions& options);

}  // namespace autogemm::cli
