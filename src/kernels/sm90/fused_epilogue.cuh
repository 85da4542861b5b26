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
// (the host's autogemm::Activation order).
template <int Bias, int Activation, bool RowScale, bool ColScale>
struct EpilogueFields {
  static constexpr int bias = Bias;
  static constexpr int activation = Activation;
  static constexpr bool row_scale = RowScale, col_scale = ColScale;
  static constexpr bool fused = Bias != 0 || Activation != 0 || RowScale || ColScale;
};

template <class T>
struct VoidOf {
  using type = void;
};
template <class Cfg, class = void>
struct EpilogueOfImpl {
  using type = EpilogueFields<0, 0, false, false>;
};
template <class Cfg>
struct EpilogueOfImpl<Cfg, typename VoidOf<typename Cfg::epilogue>::type> {
  using type = typename Cfg::epilogue;
};
template <class Cfg>
using EpilogueOf = typename EpilogueOfImpl<Cfg>::type;

template <int Activation>
__device__ __forceinline__ float activate(float x) {
  if constexpr (Activation == 1) {
    return fmaxf(x, 0.0f);
  } else if constexpr (Activation == 2) {
    // tanhf, not tanh.approx.f32: its 2^-11 relative error would show in fp32 outputs.
    const float u = 0.7978845608028654f * (x + 0.044715f * x * x * x);
    return 0.5f * x * (1.0f + tanhf(u));
  } else if constexpr (Activation == 3) {
    return 0.5f * x * (1.0f + erff(x * 0.7071067811865476f));
  } else if constexpr (Activation == 4) {
    // x / (1 + e^-x): for x < -88 e^-x is inf and the quotient -0, the limit.
    return x / (1.0f + __expf(-x));
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

// Elements i and i + 1 (i even, the vector's address aligned to two elements: checked by the
// host), of which only those below `limit` are read; the rest are `fill`.
template <int Kind>
__device__ __forceinline__ float2 load_vector_pair(const void* base, long long i, long long limit,
                                                   float fill) {
  if (i + 1 < limit) {
    if constexpr (Kind == 1) {
      const unsigned w = __ldg(reinterpret_cast<const unsigned*>(
          static_cast<const unsigned short*>(base) + i));
      return make_float2(ptx::bf16_to_float(static_cast<unsigned short>(w & 0xffffu)),
                         ptx::bf16_to_float(static_cast<unsigned short>(w >> 16)));
    } else {
      return __ldg(reinterpret_cast<const float2*>(static_cast<const float*>(base) + i));
    }
  }
  if (i < limit) return make_float2(load_vector_element<Kind>(base, i), fill);
  return make_float2(fill, fill);
}

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
    return activate<E::activation>(v);
  }
};

// The tile family's per-thread view of one tile (accumulator layout: epilogue.cuh). A thread's
// fragment has 2 * Slabs rows (slab s, half h: row 64 s + 16 warp + lane / 4 + 8 h) and, per
// 8-column step, one pair of adjacent columns shared by every row. So the row-indexed vectors
// are read once per tile into registers (load_rows), and the column-indexed ones once per pair
// (apply_pair, in the unrolled loop over the pairs: the same pair's columns serve both halves of
// every slab). In the kernel's orientation: with d_transposed the kernel's rows are the caller's
// columns, so bias and col_scale are row-indexed and row_scale column-indexed.
template <class Cfg, int Slabs>
struct TileEpilogue {
  using E = EpilogueOf<Cfg>;
  static constexpr bool kTransposed = Cfg::d_transposed;
  static constexpr bool kRowMul = kTransposed ? E::col_scale : E::row_scale;
  static constexpr bool kRowAdd = kTransposed && E::bias != 0;
  static constexpr bool kColMul = kTransposed ? E::row_scale : E::col_scale;
  static constexpr bool kColAdd = !kTransposed && E::bias != 0;
  float row_mul[kRowMul ? Slabs : 1][2];
  float row_add[kRowAdd ? Slabs : 1][2];

  // `m0`: the kernel row of the consumer's first row; rows at or past params.m (the kernel's
  // M) read nothing (they are never stored).
  __device__ __forceinline__ void load_rows(const GemmParams& params, long long m0) {
    if constexpr (kRowMul || kRowAdd) {
      const int lane = threadIdx.x % 32, warp = (threadIdx.x % 128) / 32;
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
  }

  // The column-indexed vectors at the kernel columns gcol, gcol + 1 (gcol even).
  struct Columns {
    float2 mul, add;
  };
  __device__ __forceinline__ static Columns load_columns(const GemmParams& params, long long gcol) {
    Columns c{make_float2(1.0f, 1.0f), make_float2(0.0f, 0.0f)};
    if constexpr (kColMul)
      c.mul = load_vector_pair<2>(kTransposed ? params.row_scale : params.col_scale, gcol, Cfg::n,
                                  1.0f);
    if constexpr (kColAdd) c.add = load_vector_pair<E::bias>(params.bias, gcol, Cfg::n, 0.0f);
    return c;
  }

  // v0, v1 (alpha * acc at slab s, register r: columns gcol, gcol + 1) through the epilogue.
  __device__ __forceinline__ void apply_pair(const GemmParams& params, int s, int r, long long gcol,
                                             float& v0, float& v1) const {
    if constexpr (E::fused) {
      const int h = (r >> 1) & 1;
      const Columns c = load_columns(params, gcol);
      if constexpr (kRowMul) {
        v0 *= row_mul[s][h];
        v1 *= row_mul[s][h];
      }
      if constexpr (kColMul) {
        v0 *= c.mul.x;
        v1 *= c.mul.y;
      }
      if constexpr (kRowAdd) {
        v0 += row_add[s][h];
        v1 += row_add[s][h];
      }
      if constexpr (kColAdd) {
        v0 += c.add.x;
        v1 += c.add.y;
      }
      v0 = activate<E::activation>(v0);
      v1 = activate<E::activation>(v1);
    }
  }
};

}  // namespace autogemm::sm90
