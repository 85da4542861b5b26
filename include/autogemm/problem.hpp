#pragma once
// The problem a user asks for: D = alpha * op(A) * op(B) + beta * C (or with the fused
// epilogue, autogemm/epilogue.hpp), nothing about how.
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "autogemm/epilogue.hpp"
#include "autogemm/weights.hpp"

namespace autogemm {

// Element types of operands and accumulators (the names PTX uses).
enum class DType : int { bf16, fp16, fp32, tf32, e4m3, e5m2, s8, u8, s32 };

std::string_view to_string(DType t);
std::optional<DType> parse_dtype(std::string_view s);  // "bf16", "fp16"/"f16", "fp8"/"e4m3", ...
int dtype_bytes(DType t);                              // storage bytes of one element

// Storage of A and B, named like DeepGEMM/BLAS from the row-major point of view: the first
// letter is A, the second B; 'n' = stored in its natural row-major shape (A: M x K, B: K x N),
// 't' = stored transposed (A: K x M, B: N x K). So NT is A (M x K) and B (N x K), both with K
// contiguous ("K-major"), the layout wgmma reads natively and the public suite uses.
enum class Layout { nt, nn, tn, tt };

std::string_view to_string(Layout l);
std::optional<Layout> parse_layout(std::string_view s);
constexpr bool a_is_k_major(Layout l) { return l == Layout::nt || l == Layout::nn; }
constexpr bool b_is_k_major(Layout l) { return l == Layout::nt || l == Layout::tt; }

// How FP8 operands are scaled back to real values.
enum class Scaling {
  none,        // BF16/FP16 inputs
  per_tensor,  // one FP32 scale for A, one for B
  block_1x128_128x128,  // A: one scale per row per 128 of K; B: one per 128 x 128 block
  // A: one scale per row (per token, M floats); B: one per row of B, i.e. per column of D (per
  // channel, N floats). PyTorch's "rowwise" _scaled_mm, vLLM's cutlass_scaled_mm. Applied by
  // the fused epilogue after the sum (Epilogue::row_scale, col_scale read scale_a, scale_b).
  rowwise,
  // A and B: one scale per row per 128 of K, A's M x ceil(K/128) and B's N x ceil(K/128), both
  // row-major. Weight gradients, whose K is the tokens: both operands quantised per 128 tokens
  // (DeepGEMM's "1D1D"; quantize_fp8_1x128_transposed writes them). Tile family only.
  block_1x128_1x128,
};
std::string_view to_string(Scaling s);

// Grouped GEMM (autogemm/grouped.hpp): num_groups GEMMs sharing N and K in one call.
enum class Grouping {
  none,        // one GEMM
  contiguous,  // A and D: the groups' rows concatenated along M; a per-row group index
  masked,      // A and D: [num_groups, m (= max_m), *]; masked_m[g] valid rows per group
  // Groups along K (weight gradients of a mixture-of-experts layer, autogemm/wgrad.hpp): A and
  // B are the groups' tokens concatenated along K, group g the run [ends[g-1], ends[g]); D is
  // [num_groups, m, *], one m x n product per group, each reduced over its own run.
  k_contiguous,
};
std::string_view to_string(Grouping g);

// At most this many signalled row bands (GemmProblem::signal_bands).
inline constexpr int kMaxSignalBands = 16;

struct GemmProblem {
  int64_t m = 0, n = 0, k = 0;
  DType a_type = DType::bf16;
  DType b_type = DType::bf16;
  // C has the same type as D. e4m3 (FP8 output): D is quantised in the epilogue with one fp32
  // scale per row per 128 of its columns, amax / 448 of them, written to GemmOperands::d_scale
  // as [M, ceil(D columns / 128)] row-major: the A scales of a block-scaled FP8 GEMM, so two
  // FP8 GEMMs chain with no kernel between them. No C (reads_c false).
  DType d_type = DType::bf16;
  DType accumulator = DType::fp32;
  Layout layout = Layout::nt;
  // Leading dimensions in elements: distance between consecutive rows of the matrix *as
  // stored* (A: M x K row-major for 'n', K x M for 't'). 0 = packed (the row length).
  int64_t lda = 0, ldb = 0, ldc = 0, ldd = 0;
  Scaling scaling = Scaling::none;
  bool reads_c = false;              // beta != 0: the epilogue reads C
  // What the epilogue fuses before D is stored (bias, activation, row and column scales); its
  // vectors are GemmOperands' bias, row_scale and col_scale. Empty: the plain epilogue.
  Epilogue epilogue;
  // Weight-only quantised B (autogemm/weights.hpp): B is a packed weight [N, K] in this format,
  // its values, scales (GemmOperands::b_scales) and zeros (b_zeros), dequantised in registers
  // and multiplied in bf16 (a_type and b_type bf16, layout nt; ldb in elements of the unpacked
  // row, a multiple of the group). Empty: B is stored as b_type.
  std::optional<WeightFormat> weight_format;
  // Grouped problems only (grouped_gemm; gemm() refuses them). B is [num_groups, N, K]; m is
  // the rows of A and D (contiguous) or max_m, the rows of each group (masked). expected_m:
  // the valid rows a group is expected to have, for planning (0: m / num_groups contiguous,
  // m masked). k_contiguous: m, n and k are each group's rows, columns and the tokens of all
  // groups; expected_m is then the tokens a group is expected to have (0: k / num_groups).
  Grouping grouping = Grouping::none;
  int64_t num_groups = 1;
  int64_t expected_m = 0;
  // Row bands whose completion the kernel signals (GemmOperands::band_ends, band_counters,
  // band_flags), 0..kMaxSignalBands; 0: none. D's rows are computed band by band, and band b's
  // flag becomes 1 once its rows are written: a caller can move finished rows (to another GPU,
  // tensor_parallel.hpp) while the GEMM computes the rest, with no kernel boundary between the
  // bands. Ungrouped problems on the tile family only (plan/rules.cpp signal_violation).
  int signal_bands = 0;

  int64_t lda_or_packed() const;     // lda, or the stored row length when lda == 0
  int64_t ldb_or_packed() const;
  int64_t ldc_or_packed() const;     // D's columns when 0
  int64_t ldd_or_packed() const;     // D's columns when 0
  // Columns of D (and C): N, or N / 2 with a gated epilogue.
  int64_t d_cols() const { return epilogue.gated ? n / 2 : n; }
  // Rows of D (and C) as stored, and of A when it is K-major: m, or num_groups x m for the
  // masked and k_contiguous layouts.
  int64_t stored_rows() const {
    return grouping == Grouping::masked || grouping == Grouping::k_contiguous ? num_groups * m : m;
  }
  // Valid rows a group is expected to have (expected_m, or its default above); m when not
  // grouped.
  int64_t expected_group_rows() const;
  // Tokens a k_contiguous group is expected to have (expected_m, or k / num_groups).
  int64_t expected_group_k() const;
  // Useful flops: of the expected valid rows for grouped problems (k_contiguous: every token
  // once).
  double flops() const {
    const double rows = grouping == Grouping::none || grouping == Grouping::k_contiguous
                            ? double(m)
                            : double(expected_group_rows()) * num_groups;
    return 2.0 * rows * double(n) * double(k);
  }
  // Bytes of B as stored: b_type's, or the packed weight's values, scales and zeros.
  double b_bytes() const;
  // Fewest bytes any kernel must move through DRAM: read A, B (and C) once, write D once.
  double min_bytes() const;
};

// Checks the problem and throws InvalidArgument naming the first bad field, its value and the
// rule: sizes >= 1, supported type combinations, leading dimensions >= the row length.
// Rules that only our TMA path needs (16-byte row alignment) are *not* errors here: the
// planner copies A or B into padded rows, stores D by the threads, or runs cuBLASLt (see
// tma_incompatibility() and src/plan/operand_copy.hpp).
void validate(const GemmProblem& p);

// What the kernel's fused epilogue computes: the problem's epilogue, with the row and column
// scales too when the scaling is rowwise (read from scale_a and scale_b). Codegen, the kernel's
// identity and the launcher all take it from here.
Epilogue kernel_epilogue(const GemmProblem& p);

// True when D's rows end inside a 16-byte chunk (N * sizeof(D) not a multiple of 16). TMA
// stores clip at 16-byte granularity, not per element (measured on an H200: N = 2100 bf16 wrote
// columns 2100-2103 of the padding), so such problems stage D and store it by the threads.
bool d_rows_end_mid_chunk(const GemmProblem& p);

// Empty when TMA can describe every operand of the problem, else why not (naming the field,
// value and rule), e.g. "lda = 1001 elements (2002 bytes): TMA needs row strides that are a
// multiple of 16 bytes". The first of tma_load_incompatibility and tma_store_incompatibility.
std::string tma_incompatibility(const GemmProblem& p);

// The smallest row stride of at least `ld` elements of `t` that is a multiple of 16 bytes
// (`ld` itself when it is one), or 0 when none is within the size limit (2^31 - 1).
int64_t tma_row_stride(int64_t ld, DType t);

// The same rule for the operands TMA loads (A and B) ...
std::string tma_load_incompatibility(const GemmProblem& p);

// ... and for the ones it would store and read in the epilogue (D, and C when read). Where
// these break the rule, the threads store D (from shared memory, in 16-byte chunks aligned to
// its rows) and read C.
std::string tma_store_incompatibility(const GemmProblem& p);

// True when D is written by the threads rather than by TMA (StorePath::staged): its rows end
// mid-chunk, or D's or C's row strides break TMA's rule.
bool d_needs_thread_stores(const GemmProblem& p);

}  // namespace autogemm
