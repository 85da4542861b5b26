#include "plan/operand_copy.hpp"

namespace autogemm::plan {

namespace {

constexpr int64_t kTmaStrideBytes = 16;      // cuTensorMapEncodeTiled: strides % 16 == 0
constexpr int64_t kMaxElements = (int64_t(1) << 31) - 1;   // the size rule (problem.cpp)

// The row stride a copy would use, or 0 when the caller's is fine or no padding helps.
int64_t padded_ld(int64_t ld, DType type) {
  const int64_t bytes = dtype_bytes(type);
  if (ld * bytes % kTmaStrideBytes == 0) return 0;
  const int64_t padded = (ld * bytes + kTmaStrideBytes - 1) / kTmaStrideBytes * kTmaStrideBytes / bytes;
  return padded <= kMaxElements && padded * bytes < (int64_t(1) << 40) ? padded : 0;
}

}  // namespace

GemmProblem kernel_problem(const GemmProblem& p) {
  if (p.grouping != Grouping::none) return p;
  GemmProblem k = p;
  if (const int64_t ld = padded_ld(p.lda_or_packed(), p.a_type); ld > 0) k.lda = ld;
  if (const int64_t ld = padded_ld(p.ldb_or_packed(), p.b_type); ld > 0) k.ldb = ld;
  return k;
}

bool copies_operands(const GemmProblem& p) {
  const GemmProblem k = kernel_problem(p);
  return k.lda_or_packed() != p.lda_or_packed() || k.ldb_or_packed() != p.ldb_or_packed();
}

OperandCopy operand_copy_a(const GemmProblem& call) {
  OperandCopy c;
  const GemmProblem k = kernel_problem(call);
  if (k.lda_or_packed() == call.lda_or_packed()) return c;
  // problem.hpp: A is stored M x K (K-major) or K x M.
  c.rows = a_is_k_major(call.layout) ? call.m : call.k;
  c.row_elements = a_is_k_major(call.layout) ? call.k : call.m;
  c.source_ld = call.lda_or_packed();
  c.padded_ld = k.lda_or_packed();
  c.element_bytes = dtype_bytes(call.a_type);
  return c;
}

OperandCopy operand_copy_b(const GemmProblem& call) {
  OperandCopy c;
  const GemmProblem k = kernel_problem(call);
  if (k.ldb_or_packed() == call.ldb_or_packed()) return c;
  // B is stored N x K (K-major) or K x N.
  c.rows = b_is_k_major(call.layout) ? call.n : call.k;
  c.row_elements = b_is_k_major(call.layout) ? call.k : call.n;
  c.source_ld = call.ldb_or_packed();
  c.padded_ld = k.ldb_or_packed();
  c.element_bytes = dtype_bytes(call.b_type);
  return c;
}

}  // namespace autogemm::plan
