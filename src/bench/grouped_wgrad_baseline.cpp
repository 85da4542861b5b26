// The grouped weight-gradient bench's per-expert cuBLASLt loop (grouped_wgrad_baseline.hpp).
#include "bench/grouped_wgrad_baseline.hpp"

#include "autogemm/wgrad.hpp"
#include "runtime/cublaslt.hpp"

namespace autogemm::bench {

CublasLtWgradLoop::CublasLtWgradLoop(const GroupedWgradItem& item, const void* dy, const void* x,
                                     void* dw) {
  const GemmProblem& p = item.problem;
  const int64_t element = dtype_bytes(p.a_type);
  const int64_t dw_group_bytes = p.m * p.n * dtype_bytes(p.d_type);
  int64_t start = 0;
  for (std::size_t g = 0; g < item.group_tokens.size(); ++g) {
    const int64_t tokens = item.group_tokens[g];
    char* dw_g = static_cast<char*>(dw) + int64_t(g) * dw_group_bytes;
    if (tokens > 0) {   // cuBLASLt refuses k = 0; dW_g += 0 is nothing to do
      problems_.push_back(
          weight_gradient_problem(tokens, p.m, p.n, p.a_type, /*accumulate=*/true, p.d_type));
      GemmOperands ops;
      ops.a = static_cast<const char*>(dy) + start * p.m * element;
      ops.b = static_cast<const char*>(x) + start * p.n * element;
      ops.c = dw_g;
      ops.d = dw_g;
      ops.beta = 1.0f;
      operands_.push_back(ops);
    }
    start += tokens;
  }
}

void CublasLtWgradLoop::operator()(cudaStream_t stream) const {
  for (std::size_t i = 0; i < problems_.size(); ++i)
    runtime::cublaslt_gemm(problems_[i], operands_[i], stream);
}

}  // namespace autogemm::bench
