// Pointer math of a split GEMM's pieces (operand_views.hpp).
#include "multi/operand_views.hpp"

namespace autogemm::multi {

const char* OperandView::at(int64_t i, int64_t j) const {
  const int64_t di = i - i0, dj = j - j0;
  const int64_t offset = k_major ? di * ld + dj : dj * ld + di;
  return base + offset * elem_bytes;
}

StoredBlock stored_block(bool k_major, int64_t i_begin, int64_t i_end, int64_t k_begin, int64_t k_end) {
  return k_major ? StoredBlock{i_begin, i_end, k_begin, k_end}
                 : StoredBlock{k_begin, k_end, i_begin, i_end};
}

bool block_is_contiguous(const StoredBlock& block, int64_t stored_row_length) {
  return block.rows() <= 1 || (block.col_begin == 0 && block.col_end == stored_row_length);
}

int64_t packed_ld(int64_t cols, int elem_bytes) {
  const int64_t per_16_bytes = elem_bytes >= 16 ? 1 : 16 / elem_bytes;
  return (cols + per_16_bytes - 1) / per_16_bytes * per_16_bytes;
}

int64_t contiguous_bytes(const StoredBlock& block, int64_t ld, int elem_bytes) {
  // The last row ends at its last element: the sender's buffer need not hold its padding.
  return block.rows() <= 0 ? 0 : ((block.rows() - 1) * ld + block.cols()) * elem_bytes;
}

OperandView whole_a(const GemmProblem& p, const void* a) {
  return {static_cast<const char*>(a), p.lda_or_packed(), 0, 0, a_is_k_major(p.layout),
          dtype_bytes(p.a_type)};
}

OperandView whole_b(const GemmProblem& p, const void* b) {
  return {static_cast<const char*>(b), p.ldb_or_packed(), 0, 0, b_is_k_major(p.layout),
          dtype_bytes(p.b_type)};
}

namespace {
int64_t scale_blocks(int64_t k) { return (k + 127) / 128; }
}  // namespace

const float* a_scales_at(const float* base, int64_t origin_m, int64_t m, int64_t k) {
  return base + (m - origin_m) * scale_blocks(k);
}

const float* b_scales_at(const float* base, int64_t origin_n, int64_t n, int64_t k) {
  return base + (n / 128 - origin_n / 128) * scale_blocks(k);
}

}  // namespace autogemm::multi
