#include "autogemm/problem.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <string>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"

namespace autogemm {

std::string_view to_string(DType t) {
  switch (t) {
    case DType::bf16: return "bf16";
    case DType::fp16: return "fp16";
    case DType::fp32: return "fp32";
    case DType::tf32: return "tf32";
    case DType::e4m3: return "e4m3";
    case DType::e5m2: return "e5m2";
    case DType::s8: return "s8";
    case DType::u8: return "u8";
    case DType::s32: return "s32";
  }
  return "?";
}

std::optional<DType> parse_dtype(std::string_view s) {
  std::string v(s);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "bf16" || v == "bfloat16") return DType::bf16;
  if (v == "fp16" || v == "f16" || v == "half") return DType::fp16;
  if (v == "fp32" || v == "f32" || v == "float") return DType::fp32;
  if (v == "tf32") return DType::tf32;
  if (v == "fp8" || v == "e4m3" || v == "fp8_e4m3") return DType::e4m3;
  if (v == "e5m2" || v == "fp8_e5m2") return DType::e5m2;
  if (v == "s8" || v == "int8") return DType::s8;
  if (v == "u8" || v == "uint8") return DType::u8;
  if (v == "s32" || v == "int32") return DType::s32;
  return std::nullopt;
}

int dtype_bytes(DType t) {
  switch (t) {
    case DType::bf16: case DType::fp16: return 2;
    case DType::fp32: case DType::tf32: case DType::s32: return 4;
    case DType::e4m3: case DType::e5m2: case DType::s8: case DType::u8: return 1;
  }
  return 0;
}

std::string_view to_string(Layout l) {
  switch (l) {
    case Layout::nt: return "nt";
    case Layout::nn: return "nn";
    case Layout::tn: return "tn";
    case Layout::tt: return "tt";
  }
  return "?";
}

std::optional<Layout> parse_layout(std::string_view s) {
  std::string v(s);
  std::transform(v.begin(), v.end(), v.begin(), [](unsigned char c) { return std::tolower(c); });
  if (v == "nt") return Layout::nt;
  if (v == "nn") return Layout::nn;
  if (v == "tn") return Layout::tn;
  if (v == "tt") return Layout::tt;
  return std::nullopt;
}

std::string_view to_string(Scaling s) {
  switch (s) {
    case Scaling::none: return "none";
    case Scaling::per_tensor: return "per_tensor";
    case Scaling::block_1x128_128x128: return "block_1x128_128x128";
    case Scaling::rowwise: return "rowwise";
    case Scaling::block_1x128_1x128: return "block_1x128_1x128";
  }
  return "?";
}

// Row length of each stored matrix (the minimum leading dimension).
static int64_t a_row_length(const GemmProblem& p) { return a_is_k_major(p.layout) ? p.k : p.m; }
static int64_t b_row_length(const GemmProblem& p) { return b_is_k_major(p.layout) ? p.k : p.n; }

int64_t GemmProblem::lda_or_packed() const { return lda ? lda : a_row_length(*this); }
int64_t GemmProblem::ldb_or_packed() const { return ldb ? ldb : b_row_length(*this); }
int64_t GemmProblem::ldc_or_packed() const { return ldc ? ldc : d_cols(); }
int64_t GemmProblem::ldd_or_packed() const { return ldd ? ldd : d_cols(); }

std::string_view to_string(Grouping g) {
  switch (g) {
    case Grouping::none: return "none";
    case Grouping::contiguous: return "contiguous";
    case Grouping::masked: return "masked";
    case Grouping::k_contiguous: return "k_contiguous";
  }
  return "?";
}

int64_t GemmProblem::expected_group_rows() const {
  if (grouping == Grouping::none || grouping == Grouping::k_contiguous) return m;
  if (expected_m > 0) return expected_m;
  return grouping == Grouping::masked ? m : std::max<int64_t>(1, m / std::max<int64_t>(num_groups, 1));
}

int64_t GemmProblem::expected_group_k() const {
  if (grouping != Grouping::k_contiguous) return k;
  if (expected_m > 0) return expected_m;
  return std::max<int64_t>(1, k / std::max<int64_t>(num_groups, 1));
}

double GemmProblem::b_bytes() const {
  if (weight_format) return double(weight_bytes(*weight_format, n, k).total());
  return double(n) * k * dtype_bytes(b_type);
}

double GemmProblem::min_bytes() const {
  // Groups along K: A and B once (every token once), every group's D (and C).
  if (grouping == Grouping::k_contiguous) {
    const double d = double(num_groups) * m * d_cols() * dtype_bytes(d_type);
    return double(m) * k * dtype_bytes(a_type) + double(n) * k * dtype_bytes(b_type) +
           d * (reads_c ? 2 : 1);
  }
  // Grouped: the expected valid rows of A and D, and every group's B.
  const double rows = grouping == Grouping::none ? double(m)
                                                 : double(expected_group_rows()) * num_groups;
  double bytes = rows * k * dtype_bytes(a_type) + double(num_groups) * b_bytes() +
                 rows * d_cols() * dtype_bytes(d_type);
  if (reads_c) bytes += rows * d_cols() * dtype_bytes(d_type);
  return bytes;
}

static bool is_fp8(DType t) { return t == DType::e4m3 || t == DType::e5m2; }

// The size rule: tensor-map dimensions and kernel coordinates are 32-bit signed, so sizes are
// < 2^31. The TMA padding hint below keeps it too.
static constexpr int64_t kMaxSize = (int64_t(1) << 31) - 1;

// A type as users spell it: the PTX name, and the other spelling parse_dtype takes for it
// when that is what a user more likely typed ("s8 (int8)").
static std::string spelled(DType t) {
  switch (t) {
    case DType::s8: return "s8 (int8)";
    case DType::u8: return "u8 (uint8)";
    case DType::s32: return "s32 (int32)";
    case DType::e4m3: return "e4m3 (fp8)";
    default: return std::string(to_string(t));
  }
}

// Grouped operands are packed: every leading dimension 0.
static void require_packed(const GemmProblem& p) {
  for (auto [name, ld] : {std::pair{"lda", p.lda}, {"ldb", p.ldb}, {"ldc", p.ldc}, {"ldd", p.ldd}})
    if (ld != 0)
      throw InvalidArgument(name, std::to_string(ld),
                            "grouped operands are packed: leave the leading dimension 0");
}

// Groups along K (autogemm/wgrad.hpp grouped_weight_gradient): token-major A and B, one D per
// group.
static void validate_k_grouping(const GemmProblem& p) {
  if (p.layout != Layout::tn)
    throw InvalidArgument("layout", std::string(to_string(p.layout)),
                          "groups along K (k_contiguous) take token-major A and B: layout tn "
                          "(A stored K x M, B stored K x N)");
  if (p.a_type != DType::bf16 && p.a_type != DType::fp16)
    throw InvalidArgument("a_type", spelled(p.a_type),
                          "groups along K (k_contiguous) take bf16 or fp16 inputs (FP8 with 1x128 "
                          "scales along the tokens is not built)");
  if (!p.epilogue.empty())
    throw InvalidArgument("epilogue", p.epilogue.describe(),
                          "groups along K (k_contiguous) have no fused epilogue");
  require_packed(p);
  if (p.m % kKGroupedRowMultiple != 0)
    throw InvalidArgument("m", std::to_string(p.m),
                          fmt::format("groups along K (k_contiguous) store each group's m rows of "
                                      "D as whole {}-row tiles: m must be a multiple of {}",
                                      kKGroupedRowMultiple, kKGroupedRowMultiple));
  if (p.num_groups * p.m > kMaxSize)
    throw InvalidArgument("num_groups x m", std::to_string(p.num_groups * p.m),
                          "D's rows (groups x m) must be < 2^31");
}

// The grouped layouts' own rules (include/autogemm/grouped.hpp).
static void validate_grouping(const GemmProblem& p) {
  const std::string what(to_string(p.grouping));
  if (p.num_groups < 1 || p.num_groups > kMaxSize)
    throw InvalidArgument("num_groups", std::to_string(p.num_groups), "must be in 1 .. 2^31 - 1");
  if (p.expected_m < 0)
    throw InvalidArgument("expected_m", std::to_string(p.expected_m), "must be >= 0 (0 = default)");
  if (p.grouping == Grouping::k_contiguous) {
    validate_k_grouping(p);
    return;
  }
  if (p.layout != Layout::nt)
    throw InvalidArgument("layout", std::string(to_string(p.layout)),
                          fmt::format("grouped GEMM ({}) takes layout nt: A rows K-contiguous, "
                                      "B [groups, N, K]",
                                      what));
  const bool block_fp8 = is_fp8(p.a_type) && p.scaling == Scaling::block_1x128_128x128;
  if (p.a_type != DType::bf16 && p.a_type != DType::fp16 && !block_fp8)
    throw InvalidArgument(is_fp8(p.a_type) ? "scaling" : "a_type",
                          is_fp8(p.a_type) ? std::string(to_string(p.scaling)) : spelled(p.a_type),
                          fmt::format("grouped GEMM ({}) takes bf16 or fp16 inputs, or FP8 with "
                                      "block scales (1x128 for A's rows, 128x128 per group of B)",
                                      what));
  if (p.reads_c)
    throw InvalidArgument("reads_c", "true", "grouped GEMM has no C input (beta = 0)");
  require_packed(p);
  if (p.grouping == Grouping::masked) {
    if (p.m % kMaskedMaxMAlignment != 0)
      throw InvalidArgument("m (max_m)", std::to_string(p.m),
                            fmt::format("the masked layout needs max_m a multiple of {} rows, "
                                        "so no tile crosses into the next group",
                                        kMaskedMaxMAlignment));
    if (p.num_groups * p.m > kMaxSize)
      throw InvalidArgument("num_groups x max_m", std::to_string(p.num_groups * p.m),
                            "must be < 2^31 rows");
  } else if (p.m % kGroupedRowAlignment != 0) {
    throw InvalidArgument("m", std::to_string(p.m),
                          fmt::format("the contiguous layout's rows are whole runs of {}-row "
                                      "aligned groups: m must be a multiple of {}",
                                      kGroupedRowAlignment, kGroupedRowAlignment));
  }
  if (p.num_groups * p.n > kMaxSize)
    throw InvalidArgument("num_groups x n", std::to_string(p.num_groups * p.n),
                          "B's rows (groups x N) must be < 2^31");
}

// Weight-only B (autogemm/weights.hpp): the packed layouts' own rules.
static void validate_weight_format(const GemmProblem& p) {
  const std::string format(to_string(*p.weight_format));
  if (p.a_type != DType::bf16 || p.b_type != DType::bf16)
    throw InvalidArgument(p.a_type != DType::bf16 ? "a_type" : "b_type",
                          spelled(p.a_type != DType::bf16 ? p.a_type : p.b_type),
                          fmt::format("{} weights are dequantised to bf16 and multiply bf16 "
                                      "activations: a_type and b_type must be bf16",
                                      format));
  if (p.layout != Layout::nt)
    throw InvalidArgument("layout", std::string(to_string(p.layout)),
                          fmt::format("{} weights are packed rows of K ([N, K], layout nt) and "
                                      "the activations' rows K-contiguous",
                                      format));
  // Grouped: the masked layout (a MoE decode step's tokens per expert, include/autogemm/
  // grouped.hpp), every expert's packed weight in one [groups, N, ...] tensor.
  if (p.grouping != Grouping::none && p.grouping != Grouping::masked)
    throw InvalidArgument("grouping", std::string(to_string(p.grouping)),
                          fmt::format("{} weights: grouped weight-only GEMM takes the masked "
                                      "layout (each expert's tokens in rows of max_m); call "
                                      "gemm() per expert for the others",
                                      format));
  if (p.grouping == Grouping::masked && !p.epilogue.empty())
    throw InvalidArgument("epilogue", p.epilogue.describe(),
                          fmt::format("{} weights, grouped: no fused epilogue yet (D as "
                                      "alpha x A B)",
                                      format));
  if (p.d_type == DType::e4m3)
    throw InvalidArgument("d_type", spelled(p.d_type),
                          fmt::format("{} weights: the weight-only kernels write bf16, fp16 or "
                                      "fp32",
                                      format));
  const int64_t multiple = weight_gemm_k_multiple(*p.weight_format);
  if (p.k % multiple != 0)
    throw InvalidArgument("k", std::to_string(p.k),
                          fmt::format("{} weights need K a multiple of {} ({})", format, multiple,
                                      weight_group_size(*p.weight_format) > 0
                                          ? "one scale per group of K"
                                          : "16-byte loads of the int8 rows"));
  if (p.ldb != 0 && p.ldb % multiple != 0)
    throw InvalidArgument("ldb", std::to_string(p.ldb),
                          fmt::format("{} weights: B's rows start at whole groups of {} elements",
                                      format, multiple));
}

void validate(const GemmProblem& p) {
  auto positive = [](const char* name, int64_t v) {
    if (v < 1) throw InvalidArgument(name, std::to_string(v), "must be >= 1");
    if (v > kMaxSize) throw InvalidArgument(name, std::to_string(v), "must be < 2^31");
  };
  positive("m", p.m);
  positive("n", p.n);
  positive("k", p.k);

  const bool sixteen_bit = (p.a_type == DType::bf16 || p.a_type == DType::fp16);
  if (sixteen_bit) {
    if (p.b_type != p.a_type)
      throw InvalidArgument("b_type", std::string(to_string(p.b_type)),
                            fmt::format("must equal a_type ({}) for 16-bit inputs",
                                        to_string(p.a_type)));
    if (p.scaling != Scaling::none)
      throw InvalidArgument("scaling", std::string(to_string(p.scaling)),
                            "scaling applies to FP8 inputs only");
  } else if (is_fp8(p.a_type)) {
    if (!is_fp8(p.b_type))
      throw InvalidArgument("b_type", std::string(to_string(p.b_type)),
                            "must be e4m3 or e5m2 when a_type is FP8");
    if (p.layout != Layout::nt)
      throw InvalidArgument("layout", std::string(to_string(p.layout)),
                            "FP8 operands must both be K-major (layout nt): wgmma has no "
                            "transposed FP8 form");
    if (p.scaling == Scaling::none)
      throw InvalidArgument("scaling", "none",
                            "FP8 inputs need per_tensor, rowwise, block_1x128_128x128 or "
                            "block_1x128_1x128 scales");
    // 1x128 on both operands is the weight gradient's scaling (autogemm/wgrad.hpp): one dense
    // GEMM of the tile family into bf16, fp16 or fp32.
    if (p.scaling == Scaling::block_1x128_1x128 && p.grouping != Grouping::none)
      throw InvalidArgument("scaling", "block_1x128_1x128",
                            fmt::format("grouped GEMM ({}) takes block_1x128_128x128 FP8 scales",
                                        to_string(p.grouping)));
    if (p.scaling == Scaling::block_1x128_1x128 && p.d_type == DType::e4m3)
      throw InvalidArgument("d_type", "e4m3",
                            "FP8 output is not built with block_1x128_1x128 inputs: write bf16, "
                            "fp16 or fp32");
    if (p.scaling == Scaling::rowwise && (p.epilogue.row_scale || p.epilogue.col_scale))
      throw InvalidArgument(p.epilogue.row_scale ? "epilogue.row_scale" : "epilogue.col_scale",
                            "true",
                            "rowwise scaling is the row and column scales (scale_a, scale_b): "
                            "fold further scales into them");
  } else {
    throw InvalidArgument("a_type", std::string(to_string(p.a_type)),
                          "supported input types are bf16, fp16 and e4m3/e5m2");
  }
  if (p.signal_bands < 0 || p.signal_bands > kMaxSignalBands)
    throw InvalidArgument("signal_bands", std::to_string(p.signal_bands),
                          fmt::format("0 (none) to {} row bands", kMaxSignalBands));
  if (p.signal_bands > 0 && p.grouping != Grouping::none)
    throw InvalidArgument("signal_bands", std::to_string(p.signal_bands),
                          "row-band signals are for one GEMM (grouped GEMM has none)");
  if (p.d_type != DType::bf16 && p.d_type != DType::fp16 && p.d_type != DType::fp32 &&
      p.d_type != DType::e4m3)
    throw InvalidArgument("d_type", spelled(p.d_type),
                          "output must be bf16, fp16, fp32 (also spelled bfloat16, f16 or "
                          "half, f32 or float) or e4m3 with 1x128 scales");
  if (p.d_type == DType::e4m3) {
    if (p.reads_c)
      throw InvalidArgument("reads_c", "true",
                            "FP8 output (d_type e4m3) takes no C: C has D's type (beta = 0)");
    if (p.grouping != Grouping::none)
      throw InvalidArgument("d_type", spelled(p.d_type),
                            "grouped GEMM writes bf16, fp16 or fp32 (FP8 output is for gemm())");
    // The FP8 output leaves by TMA, whose rows are whole 16-byte chunks; its consumer, a
    // block-scaled FP8 GEMM, needs K-rows 16-byte aligned too.
    if (p.d_cols() % 16 != 0)
      throw InvalidArgument(p.epilogue.gated ? "n / 2 (D's columns)" : "n",
                            std::to_string(p.d_cols()),
                            "FP8 output (d_type e4m3) needs D's rows whole 16-byte chunks: a "
                            "multiple of 16 columns");
    if (p.ldd % 16 != 0)
      throw InvalidArgument("ldd", std::to_string(p.ldd),
                            "FP8 output (d_type e4m3) is stored by TMA: ldd must be a multiple "
                            "of 16 elements (16 bytes)");
  }
  if (p.epilogue.gated) {
    if (p.epilogue.activation == Activation::none)
      throw InvalidArgument("epilogue.activation", "none",
                            "a gated epilogue applies its activation to the gate: silu (SwiGLU), "
                            "gelu_tanh or gelu_erf (GeGLU) or relu");
    if (p.n % (2 * kGateRun) != 0)
      throw InvalidArgument("n", std::to_string(p.n),
                            fmt::format("a gated epilogue's gate and up rows interleave in runs "
                                        "of {}: N must be a multiple of {}",
                                        kGateRun, 2 * kGateRun));
  }
  if (p.weight_format) validate_weight_format(p);
  if (p.accumulator != DType::fp32)
    throw InvalidArgument("accumulator", std::string(to_string(p.accumulator)),
                          "autogemm accumulates in fp32");

  auto leading = [](const char* name, int64_t ld, int64_t row_length, const char* what) {
    if (ld != 0 && ld < row_length)
      throw InvalidArgument(name, std::to_string(ld),
                            fmt::format("must be >= the stored row length {} ({})", row_length,
                                        what));
    if (ld < 0) throw InvalidArgument(name, std::to_string(ld), "must be >= 0 (0 = packed)");
  };
  if (p.grouping != Grouping::none) validate_grouping(p);
  else if (p.num_groups != 1)
    throw InvalidArgument("num_groups", std::to_string(p.num_groups),
                          "must be 1 unless the problem is grouped (grouping contiguous or masked)");
  leading("lda", p.lda, a_row_length(p), a_is_k_major(p.layout) ? "K, A is M x K" : "M, A is K x M");
  leading("ldb", p.ldb, b_row_length(p), b_is_k_major(p.layout) ? "K, B is N x K" : "N, B is K x N");
  const char* d_shape = p.epilogue.gated ? "N / 2, D is M x N / 2 (gated)" : "N, D is M x N";
  leading("ldc", p.ldc, p.d_cols(), d_shape);
  leading("ldd", p.ldd, p.d_cols(), d_shape);
  if (p.epilogue.bias && *p.epilogue.bias != DType::bf16 && *p.epilogue.bias != DType::fp32)
    throw InvalidArgument("epilogue.bias", spelled(*p.epilogue.bias), "the bias is bf16 or fp32");
}

bool d_rows_end_mid_chunk(const GemmProblem& p) {
  return (p.d_cols() * dtype_bytes(p.d_type)) % 16 != 0;
}

namespace {

// cuTensorMapEncodeTiled: global strides (dims 1..rank-1) must be multiples of 16 bytes (CUDA
// 13.0 cuda.h). One row of each stored matrix is one stride.
constexpr int64_t kTmaStrideBytes = 16;

std::string tma_stride_violation(const char* name, int64_t ld, DType t) {
  const int64_t bytes = ld * dtype_bytes(t);
  if (bytes % kTmaStrideBytes != 0) {
    const int64_t padded = tma_row_stride(ld, t);
    const std::string hint =
        padded > 0
            ? fmt::format("pad rows to {} elements", padded)
            : fmt::format("padding cannot help: no row length from {} up to the size limit "
                          "2^31 - 1 is a multiple of 16 bytes", ld);
    return fmt::format(
        "{} = {} elements ({} bytes): TMA needs row strides that are a multiple of 16 bytes; {}",
        name, ld, bytes, hint);
  }
  if (bytes >= (int64_t(1) << 40))
    return fmt::format("{} = {} elements ({} bytes): TMA needs row strides below 2^40 bytes", name,
                       ld, bytes);
  return {};
}

}  // namespace

int64_t tma_row_stride(int64_t ld, DType t) {
  const int64_t bytes = dtype_bytes(t);
  const int64_t padded = (ld * bytes + kTmaStrideBytes - 1) / kTmaStrideBytes * kTmaStrideBytes / bytes;
  // Never a length the size rule refuses.
  return padded <= kMaxSize ? padded : 0;
}

std::string tma_load_incompatibility(const GemmProblem& p) {
  if (auto why = tma_stride_violation("lda", p.lda_or_packed(), p.a_type); !why.empty()) return why;
  return tma_stride_violation("ldb", p.ldb_or_packed(), p.b_type);
}

std::string tma_store_incompatibility(const GemmProblem& p) {
  if (auto why = tma_stride_violation("ldd", p.ldd_or_packed(), p.d_type); !why.empty()) return why;
  return p.reads_c ? tma_stride_violation("ldc", p.ldc_or_packed(), p.d_type) : std::string();
}

std::string tma_incompatibility(const GemmProblem& p) {
  if (auto why = tma_load_incompatibility(p); !why.empty()) return why;
  return tma_store_incompatibility(p);
}

bool d_needs_thread_stores(const GemmProblem& p) {
  return d_rows_end_mid_chunk(p) || !tma_store_incompatibility(p).empty();
}

}  // namespace autogemm
