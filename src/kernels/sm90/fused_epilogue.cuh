#pragma once
// The fused epilogue (issue 50), shared by both kernel families:
//   D = act(alpha * acc * row_scale[m] * col_scale[n] + bias[n]) + beta * C
// in fp32 registers, before D is rounded. m and n are the caller's row and column; C is added
// by the caller of `apply` (each store path reads C its own way).
//
// The generated Config declares `using epilogue = EpilogueFields<...>` only when the problem
// fuses something (src/codegen/kernel_source.cpp), so a plain problem's generated source, and
// so its kernel and cache key, stay what they were; EpilogueOf<Cfg> gives it the empty fields,
// and every fused step below is `if constexpr`, so the plain kernel compiles to the same code.
#include "ptx/convert.cuh"
#include "sm90/gemm_params.cuh"

namespace autogemm::sm90 {

// bias: 0 none, 1 bf16, 2 fp32. activation: 0 none, 1 relu, 2 gelu_tanh, 3 gelu_erf, 4 silu
// (the host's autogemm::Activation order). gated: D = act(gate) * up from B's rows interleaved
// in runs of 8 (autogemm/epilogue.hpp), half the columns.
template <int Bias, int Activation, bool RowScale, bool ColScale, bool Gated = false>
struct EpilogueFields {
  static constexpr int bias = Bias;
  static constexpr int activation = Activation;
  static constexpr bool row_scale = RowScale, col_scale = ColScale, gated = Gated;
  static constexpr bool fused = Bias != 0 || Activation != 0 || RowScale || ColScale || Gated;
};

template <class T>
struct VoidOf {
  using type = void;
};
template <class Cfg, class = void>
struct EpilogueOfImpl {
  using type = EpilogueFields<0, 0, false, false, false>;
};
template <class Cfg>
struct EpilogueOfImpl<Cfg, typename VoidOf<typename Cfg::epilogue>::type> {
  using type = typename Cfg::epilogue;
};
template <class Cfg>
using EpilogueOf = typename EpilogueOfImpl<Cfg>::type;

// x sigmoid(y), the core of SiLU (y = x) and of GELU's tanh form (0.5 x (1 + tanh(u)) = x
// sigmoid(2u)). Two forms, by what D is rounded to:
//  - fp32 D: x / (1 + e^-y) with the fast divide and exponential (rcp.approx, ex2.approx: a few
//    ulp everywhere; for y < -88 e^-y is inf, its reciprocal 0 and the result -0, the limit).
//  - 16-bit and FP8 D: x (1 + tanh(y / 2)) / 2, one MUFU instruction instead of two. The MUFU
//    pipe does 16 results a clock an SM, so two per element cost a 128x256 tile 4096 clocks,
//    a quarter of its K = 512 main loop, and GELU(tanh) cost 30% more than a bias alone at 4096
//    x 32768 x 512 (H200). tanh.approx's relative error (about 2^-11) makes an absolute error
//    of at most 2^-12 |x|: an eighth of BF16's half ulp at |x|. Where the result is near 0 (x
//    below -4) the error is still 2^-12 |x|, so relative to the result it grows (SiLU(-6) up
//    to 10%), as it does in every tanh.approx GELU (CUTLASS's fast tanh, FasterTransformer).
// Division and tanhf in full precision cost 2.1x the plain GEMM at 4096 x 32768 x 512 with
// SiLU (H200): the epilogue's arithmetic runs on the consumer warps while the tensor cores wait.
template <bool Fast>
__device__ __forceinline__ float x_sigmoid(float x, float y) {
  if constexpr (Fast) {
    const float half_x = 0.5f * x;
    return fmaf(half_x, ptx::tanh_approx(0.5f * y), half_x);
  } else {
    return __fdividef(x, 1.0f + __expf(-y));
  }
}

// GELU(x) = x (1 + erf(x / sqrt 2)) / 2 = max(x, 0) - |x| tail(|x|) / 2 with tail(a) = 1 -
// erf(a / sqrt 2) >= 0, so no cancellation for x < 0, by Abramowitz and Stegun 7.1.26: tail =
// p(t) e^-z^2, t = 1 / (1 + 0.3275911 z), z = a / sqrt 2: GELU's absolute error <= 3.3e-7 over
// [-12, 12] in float (relative 1.7e-4 where |GELU| is near 1e-3; erff costs a few times more). Written without a select (one became a branch per element, and the tile's
// unrolled store loop spilled 300 bytes at 128x256 with two consumers) and with |x| the only
// value live through it.
__device__ __forceinline__ float gelu_erf(float x) {
  const float relu = fmaxf(x, 0.0f);
  const float z = fabsf(x) * 0.7071067811865476f;
  const float t = __fdividef(1.0f, fmaf(0.3275911f, z, 1.0f));
  float p = fmaf(t, 1.061405429f, -1.453152027f);
  p = fmaf(t, p, 1.421413741f);
  p = fmaf(t, p, -0.284496736f);
  p = fmaf(t, p, 0.254829592f);
  const float half_tail = 0.5f * t * p * __expf(-z * z);
  return fmaf(-1.4142135623730951f * z, half_tail, relu);   // |x| = sqrt 2 z
}

// Fast: the one-MUFU form of x_sigmoid (D rounded to 16 or 8 bits).
template <int Activation, bool Fast>
__device__ __forceinline__ float activate(float x) {
  if constexpr (Activation == 1) {
    return fmaxf(x, 0.0f);
  } else if constexpr (Activation == 2) {
    // 2u = 2 sqrt(2 / pi) (x + 0.044715 x^3)
    const float two_u = x * fmaf(0.0713548162726f, x * x, 1.5957691216057308f);
    return x_sigmoid<Fast>(x, two_u);
  } else if constexpr (Activation == 3) {
    return gelu_erf(x);
  } else if constexpr (Activation == 4) {
    return x_sigmoid<Fast>(x, x);
  } else {
    return x;
  }
}

// One element of a vector the epilogue reads (bias: Kind 1 bf16 or 2 fp32; scales: 2).
template <int Kind>
__device__ __forceinline__ float load_vector_element(const void* base, long long i) {
  if constexpr (Kind == 1)
    return ptx::bf16_to_float(__ldg(static_cast<const unsigned short*>(base) + i));
  else
    return __ldg(static_cast<const float*>(base) + i);
}

// D rounded to 16 or 8 bits (out_kind 0, 1, 3) takes the one-MUFU activations (x_sigmoid).
template <class Cfg>
inline constexpr bool kFastActivation = Cfg::out_kind != 2;

template <class Cfg>
struct FusedEpilogue {
  using E = EpilogueOf<Cfg>;
  static constexpr bool kFused = E::fused;

  // One element at the caller's (m, n), inside D: the decode family's per-element path.
  __device__ __forceinline__ static float apply(const GemmParams& params, float acc, long long m,
                                                long long n) {
    float v = params.alpha * acc;
    if constexpr (E::row_scale) v *= __ldg(params.row_scale + m);
    if constexpr (E::col_scale) v *= __ldg(params.col_scale + n);
    if constexpr (E::bias != 0) v += load_vector_element<E::bias>(params.bias, n);
    return activate<E::activation, kFastActivation<Cfg>>(v);
  }
};

// The tile family's per-thread view of one tile (accumulator layout: epilogue.cuh). A thread's
// fragment has 2 * Slabs rows (slab s, half h: row 64 s + 16 warp + lane / 4 + 8 h) and, per
// 8-column step j, one pair of adjacent columns 8 j + 2 (lane % 4) shared by every row. In the
// kernel's orientation: with d_transposed the kernel's rows are the caller's columns, so bias and
// col_scale are row-indexed and row_scale column-indexed.
//  - Row-indexed vectors: read once per tile into registers (2 * Slabs per vector).
//  - Column-indexed vectors: read once per tile, coalesced, one float per lane per 32 columns
//    (block_n / 32 registers per vector), and each pair taken from the lanes holding it with a
//    shuffle. Reading them per pair inside the staging loop instead waited out one L2 latency
//    per column step, since the reads were not moved past the staging stores: +24% (bias) and
//    +242% (bias, silu, both scales) over the plain GEMM at 4096 x 32768 x 512 on an H200.
// Every lane of the warp calls apply_pair for the same (s, r) (the shuffles need all 32): the
// store paths apply it before their per-lane bounds checks.
template <class Cfg, int Slabs>
struct TileEpilogue {
  using E = EpilogueOf<Cfg>;
  static constexpr bool kTransposed = Cfg::d_transposed;
  static constexpr bool kRowMul = kTransposed ? E::col_scale : E::row_scale;
  static constexpr bool kRowAdd = kTransposed && E::bias != 0;
  static constexpr bool kColMul = kTransposed ? E::row_scale : E::col_scale;
  static constexpr bool kColAdd = !kTransposed && E::bias != 0;
  static constexpr int kColChunks = (Cfg::block_n + 31) / 32;
  float row_mul[kRowMul ? Slabs : 1][2];
  float row_add[kRowAdd ? Slabs : 1][2];
  float col_mul[kColMul ? kColChunks : 1];
  float col_add[kColAdd ? kColChunks : 1];
  static constexpr bool kReadsVectors = kRowMul || kRowAdd || kColMul || kColAdd;

  // `m0`: the kernel row of the consumer's first row, `n0` the tile's first kernel column. Rows
  // at or past params.m (the kernel's M) and columns at or past Cfg::n read nothing (they are
  // never stored). Issued at the tile's start (Consumer::begin_tile), so the reads are in
  // flight under the k-loop. Grouped GEMM: `group` picks the group's N entries of the column
  // vectors ([groups, N]); the row vectors hold one entry per stored row.
  __device__ __forceinline__ void load(const GemmParams& params, long long m0, long long n0,
                                       int group) {
    const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
    if constexpr (kRowMul || kRowAdd) {
#pragma unroll
      for (int s = 0; s < Slabs; ++s)
#pragma unroll
        for (int h = 0; h < 2; ++h) {
          const long long row = m0 + s * 64 + 16 * warp + lane / 4 + 8 * h;
          const bool inside = row < params.m;
          if constexpr (kRowMul) {
            const float* v = kTransposed ? params.col_scale : params.row_scale;
            row_mul[s][h] = inside ? __ldg(v + row) : 1.0f;
          }
          if constexpr (kRowAdd)
            row_add[s][h] = inside ? load_vector_element<E::bias>(params.bias, row) : 0.0f;
        }
    }
    if constexpr (kColMul || kColAdd) {
      const long long group_base = Cfg::grouping != 0 ? (long long)group * Cfg::n : 0;
#pragma unroll
      for (int q = 0; q < kColChunks; ++q) {
        const int in_tile = 32 * q + lane;
        const long long col = n0 + in_tile;
        const bool inside = in_tile < Cfg::block_n && col < Cfg::n;
        if constexpr (kColMul) {
          const float* v = kTransposed ? params.row_scale : params.col_scale;
          col_mul[q] = inside ? __ldg(v + group_base + col) : 1.0f;
        }
        if constexpr (kColAdd)
          col_add[q] = inside ? load_vector_element<E::bias>(params.bias, group_base + col) : 0.0f;
      }
    }
  }

  // The store paths visit a tile's pairs column step first (epilogue.cuh for_each_pair) when
  // column vectors are read, so a step's shuffled values serve all its 2 * Slabs pairs. A gated
  // tile visits a gate step and its up step together: one set of values for each.
  static constexpr bool kColumnStepOuter = kColMul || kColAdd;
  static constexpr bool kGated = E::gated;
  float2 step_mul[kGated ? 2 : 1], step_add[kGated ? 2 : 1];

  // v0, v1 (alpha * acc at slab s, register r: the pair of columns 8 (r / 4) + 2 (lane % 4)
  // and the next) through the epilogue: scaled, biased and, unless gated (the activation is
  // then the gate's alone, gated_pair), activated. s and r are constants after the store paths'
  // unrolled loops, so the arrays are indexed statically (registers, no local memory), as
  // acc[s][r] is.
  __device__ __forceinline__ void apply_pair(int s, int r, float& v0, float& v1) {
    if constexpr (E::fused) {
      const int h = (r >> 1) & 1, j = r >> 2, q = j / 4, c = kGated ? (j & 1) : 0;
      if constexpr (kColumnStepOuter) {
        if (s == 0 && h == 0) {   // the step's first pair: its columns from the lanes holding them
          const int src = 8 * (j % 4) + 2 * (threadIdx.x % 4);
          if constexpr (kColMul)
            step_mul[c] = make_float2(__shfl_sync(0xffffffffu, col_mul[q], src),
                                      __shfl_sync(0xffffffffu, col_mul[q], src + 1));
          if constexpr (kColAdd)
            step_add[c] = make_float2(__shfl_sync(0xffffffffu, col_add[q], src),
                                      __shfl_sync(0xffffffffu, col_add[q], src + 1));
        }
      }
      if constexpr (kRowMul) {
        v0 *= row_mul[s][h];
        v1 *= row_mul[s][h];
      }
      if constexpr (kColMul) {
        v0 *= step_mul[c].x;
        v1 *= step_mul[c].y;
      }
      if constexpr (kRowAdd) {
        v0 += row_add[s][h];
        v1 += row_add[s][h];
      }
      if constexpr (kColAdd) {
        v0 += step_add[c].x;
        v1 += step_add[c].y;
      }
      if constexpr (!kGated) {
        v0 = activate<E::activation, kFastActivation<Cfg>>(v0);
        v1 = activate<E::activation, kFastActivation<Cfg>>(v1);
      }
    }
  }

  // A gated tile's output pair: act(gate) * up, the gate pair alpha * acc at register r (an even
  // 8-column step) and the up pair at r + 4 (the next step, the same columns of up).
  __device__ __forceinline__ float2 gated_pair(int s, int r, float g0, float g1, float u0,
                                               float u1) {
    apply_pair(s, r, g0, g1);
    apply_pair(s, r + 4, u0, u1);
    constexpr int kAct = E::activation;
    constexpr bool kFast = kFastActivation<Cfg>;
    return make_float2(activate<kAct, kFast>(g0) * u0, activate<kAct, kFast>(g1) * u1);
  }
};

}  // namespace autogemm::sm90
