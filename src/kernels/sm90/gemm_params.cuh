#pragma once
// The GEMM kernel's run-time parameters, shared by the host (src/runtime/launch.cpp, g++) and
// the device (gemm_kernel.cuh, NVRTC): plain C types only, so both compile the same layout.

namespace autogemm::sm90 {

// Words (u64) per tile-trace record (GemmParams::tile_trace; layout in sm90/tile_trace.cuh).
inline constexpr int kTileTraceWords = 6;

struct GemmParams {
  int m;                  // rows of A and D (run time)
  float alpha, beta;
  // Plain pointers and leading dimensions (elements) for the threads load/store paths.
  const void* a;
  const void* b;
  const void* c;
  void* d;
  long long lda, ldb, ldc, ldd;
  // FP8 scales (fp8_scales.cuh layouts); null for 16-bit inputs. Kept last so the 16-bit
  // fields keep their offsets.
  const float* scale_a;
  const float* scale_b;
  // Block scaling: scale_a(row, k_block) = scale_a[row * scale_a_row_stride + k_block *
  // scale_a_k_stride]: (ceil(K/128), 1) as the caller passes them, or (1, ld) after the
  // launcher transposed them for large M (sm90/scale_transpose.cuh).
  long long scale_a_row_stride, scale_a_k_stride;
  // Tile trace (sm90/tile_trace.cuh): records per CTA; null unless the kernel was compiled
  // with AUTOGEMM_TILE_TRACE.
  unsigned long long* tile_trace;
  int tile_trace_capacity;
  // Split-K (Cfg::split_k > 1, sm90/split_k_reduce.cuh), per (CTA tile, consumer): the splits'
  // fp32 slots, and the arrival counter and split_k ready flags (zero before the kernel and
  // after it).
  float* split_k_partials;
  unsigned* split_k_counters;
  unsigned* split_k_flags;
  // Grouped GEMM (Cfg::grouping, include/autogemm/grouped.hpp); null / 0 otherwise.
  // Contiguous: the group of each row of A and D (-1: a padding row). Masked: the valid rows of
  // each group, whose rows are group_rows (= max_m) apart in A and D. Groups along K: group_rows
  // is each group's rows of D (group_ends below).
  const int* group_index;
  const int* masked_m;
  int group_rows;
  // The fused epilogue (sm90/fused_epilogue.cuh; Cfg::epilogue says which are read), in the
  // caller's terms whatever the kernel's orientation: bias[N] (bf16 or fp32), fp32
  // row_scale[M] and col_scale[N]. Null when not fused. Kept last so the fields above keep
  // their offsets.
  const void* bias;
  const float* row_scale;
  const float* col_scale;
  // FP8 output (Cfg::out_kind 3): the epilogue's scales, d_scale[row * d_scale_ld + column / 128]
  // (autogemm/gemm.hpp GemmOperands::d_scale). Null otherwise.
  float* d_scale;
  long long d_scale_ld;
  // Weight-only B (Cfg::b_format, sm90/weight_dequant.cuh): its scales and int4-g128-zp zeros
  // (autogemm/gemm.hpp GemmOperands::b_scales, b_zeros). Null otherwise.
  const void* b_scales;
  const void* b_zeros;
  // Groups along K (Cfg::grouping 3, autogemm/wgrad.hpp): group g is tokens [group_ends[g - 1],
  // group_ends[g]), its D rows group x group_rows. Null otherwise.
  const int* group_ends;
  // Row-band signals (Cfg::band_signals, sm90/band_signal.cuh; GemmOperands::band_ends): bands
  // [band_end[b - 1], band_end[b]) of D's rows, each a whole number of cluster tiles; per band a
  // counter (0 before and after the kernel) and a flag the kernel sets to 1. band_flags may be
  // null: the bands are still walked in order, nothing is signalled.
  unsigned* band_counters;
  unsigned* band_flags;
  // Band-gated C (GemmOperands::c_band_flags): per band a flag that someone else sets to 1 once
  // the band's rows of C are in place; the kernel waits for it before loading them. Null: C is
  // in place before the kernel starts.
  const unsigned* c_band_flags;
  int band_count;
  int band_end[16];   // kMaxSignalBands (autogemm/problem.hpp)
};

}  // namespace autogemm::sm90
