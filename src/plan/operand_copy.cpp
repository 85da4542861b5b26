#include "plan/operand_copy.hpp"

#include "plan/tma_rules.hpp"

namespace autogemm::plan {

namespace {

// Copied rows are padded to whole units of the wide L2 promotion (256 bytes), not only to
// TMA's 16: with a pitch that is not a multiple of 128 bytes every 128-byte box row spans two
// L2 lines, and whole 256-byte rows also take the wide promotion (tma_l2_promotion_bytes). On
// an H200 a pitch of 2000 bytes ran 5000 x 3000 x 1000 bf16 in 53.3 us where K = 1024 took 49.6.
constexpr int64_t kCopiedRowBytes = kTmaWidePromotionBytes;

// The row stride a copy would use, or 0 when the caller's is fine or no padding helps
// (tma_row_stride in problem.hpp: the rule the error message suggests the padding from).
int64_t padded_ld(int64_t ld, DType type) {
  const int64_t stride = tma_row_stride(ld, type);
  if (stride == ld || stride == 0) return 0;
  const int64_t bytes = dtype_bytes(type);
  const int64_t wide =
      (ld * bytes + kCopiedRowBytes - 1) / kCopiedRowBytes * kCopiedRowBytes / bytes;
  return tma_row_stride(wide, type) == wide ? wide : stride;   // wide only below the size limit
}

// The copy of one operand stored as `rows` rows of `row_elements`, or none where the kernels
// read the caller's rows (`padded_ld` == `source_ld`).
OperandCopy copy_of(int64_t rows, int64_t row_elements, int64_t source_ld, int64_t padded_ld,
                    DType type) {
  OperandCopy c;
  if (padded_ld == source_ld) return c;
  c.rows = rows;
  c.row_elements = row_elements;
  c.source_ld = source_ld;
  c.padded_ld = padded_ld;
  c.element_bytes = dtype_bytes(type);
  return c;
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
  // problem.hpp: A is stored M x K (K-major) or K x M.
  const bool k_major = a_is_k_major(call.layout);
  return copy_of(k_major ? call.m : call.k, k_major ? call.k : call.m, call.lda_or_packed(),
                 kernel_problem(call).lda_or_packed(), call.a_type);
}

OperandCopy operand_copy_b(const GemmProblem& call) {
  // B is stored N x K (K-major) or K x N.
  const bool k_major = b_is_k_major(call.layout);
  return copy_of(k_major ? call.n : call.k, k_major ? call.k : call.n, call.ldb_or_packed(),
                 kernel_problem(call).ldb_or_packed(), call.b_type);
}

}  // namespace autogemm::plan
