#pragma once
// Where a piece of a split GEMM finds its operands: a view is a block of A or B as one rank
// holds it (the whole operand, or the slice it was sent), addressed by logical coordinates
// (A: row m, depth k; B: column n, depth k) whatever the layout stores. Pure pointer math, so
// the executor's addressing is tested without a GPU.
#include <cstdint>

#include "autogemm/problem.hpp"

namespace autogemm::multi {

struct OperandView {
  const char* base = nullptr;  // element (i0, j0)
  int64_t ld = 0;              // elements between stored rows
  int64_t i0 = 0, j0 = 0;      // logical origin: (m, k) for A, (n, k) for B
  bool k_major = true;         // stored with k contiguous (rows of m or n) or transposed
  int elem_bytes = 1;
  // Address of logical element (i, j).
  const char* at(int64_t i, int64_t j) const;
};

// A block of a stored matrix: rows [row_begin, row_end) x columns [col_begin, col_end) as stored.
struct StoredBlock {
  int64_t row_begin = 0, row_end = 0, col_begin = 0, col_end = 0;
  int64_t rows() const { return row_end - row_begin; }
  int64_t cols() const { return col_end - col_begin; }
};

// The stored block that holds logical rows [i_begin, i_end) x depths [k_begin, k_end) of an
// operand stored k-major or not.
StoredBlock stored_block(bool k_major, int64_t i_begin, int64_t i_end, int64_t k_begin, int64_t k_end);

// A stored block sent as it lies (whole stored rows: one contiguous run, received with the
// sender's ld) or packed first (received with packed_ld). Bytes of either form.
bool block_is_contiguous(const StoredBlock& block, int64_t stored_row_length);
int64_t packed_ld(int64_t cols, int elem_bytes);   // cols rounded up to 16 bytes (TMA's rule)
int64_t contiguous_bytes(const StoredBlock& block, int64_t ld, int elem_bytes);

// The view of a whole operand as the caller gave it.
OperandView whole_a(const GemmProblem& p, const void* a);
OperandView whole_b(const GemmProblem& p, const void* b);

// FP8 block scales of a piece: A's 1 x 128 scales of row m (rows x ceil(K/128), row-major) and
// B's 128 x 128 scales of the block holding column n (ceil(N/128) x ceil(K/128)), from a base
// that holds rows (columns) starting at `origin`.
const float* a_scales_at(const float* base, int64_t origin_m, int64_t m, int64_t k);
const float* b_scales_at(const float* base, int64_t origin_n, int64_t n, int64_t k);

// Element (row, col) of a row-major matrix with leading dimension ld.
inline char* row_major_at(void* base, int64_t ld, int64_t row, int64_t col, int elem_bytes) {
  return static_cast<char*>(base) + (row * ld + col) * elem_bytes;
}

}  // namespace autogemm::multi
