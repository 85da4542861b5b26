#pragma once
// The reference GEMM: obviously correct, not fast. 16 x 16 output tiles, operands staged
// through shared memory as doubles, FP8 values dequantised exactly (an e4m3 value has 4
// significant bits and a float scale 24, so their product fits a double's 53), products and
// sums in float64. Decodes every storage format by hand so that NVRTC needs no CUDA headers.
#include "reference/reference_params.cuh"

namespace autogemm_reference {

constexpr int kTile = 16;
constexpr int kScaleBlock = 128;   // FP8 block scaling granularity along K (and N for B)

// A binary float with one sign bit, `exponent_bits`, `mantissa_bits`; `has_infinity` false
// means the OCP "FN" convention (e4m3): the all-ones exponent is finite, only S.1111.111 is NaN.
__device__ inline double decode_bits(unsigned int bits, int exponent_bits, int mantissa_bits,
                                     bool has_infinity) {
  const unsigned int mantissa_mask = (1u << mantissa_bits) - 1u;
  const unsigned int exponent_mask = (1u << exponent_bits) - 1u;
  const unsigned int mantissa = bits & mantissa_mask;
  const unsigned int biased = (bits >> mantissa_bits) & exponent_mask;
  const bool negative = ((bits >> (exponent_bits + mantissa_bits)) & 1u) != 0u;
  const int bias = (1 << (exponent_bits - 1)) - 1;
  double value;
  if ((has_infinity && biased == exponent_mask) ||
      (!has_infinity && biased == exponent_mask && mantissa == mantissa_mask)) {
    value = (has_infinity && mantissa == 0u) ? __longlong_as_double(0x7FF0000000000000ll)
                                             : __longlong_as_double(0x7FF8000000000000ll);
  } else if (biased == 0u) {
    value = ldexp(double(mantissa), 1 - bias - mantissa_bits);
  } else {
    value = ldexp(double(mantissa + (1u << mantissa_bits)), int(biased) - bias - mantissa_bits);
  }
  return negative ? -value : value;
}

__device__ inline double load_element(const void* base, long long index, int type) {
  switch (type) {
    case kReferenceFp32: return double(static_cast<const float*>(base)[index]);
    case kReferenceBf16: {
      // bf16 is the top half of an fp32.
      const unsigned int bits = static_cast<const unsigned short*>(base)[index];
      return double(__uint_as_float(bits << 16));
    }
    case kReferenceFp16:
      return decode_bits(static_cast<const unsigned short*>(base)[index], 5, 10, true);
    case kReferenceE4m3:
      return decode_bits(static_cast<const unsigned char*>(base)[index], 4, 3, false);
    case kReferenceE5m2:
      return decode_bits(static_cast<const unsigned char*>(base)[index], 5, 2, true);
  }
  return __longlong_as_double(0x7FF8000000000000ll);  // unknown type: poison the result
}

// op(A)[row][kk], dequantised.
__device__ inline double load_a(const ReferenceGemmParams& p, long long row, long long kk) {
  const long long index = p.a_k_major ? row * p.lda + kk : kk * p.lda + row;
  double v = load_element(p.a, index, p.a_type);
  if (p.scaling == kReferenceScalePerTensor) {
    v *= double(p.scale_a[0]);
  } else if (p.scaling == kReferenceScaleBlock || p.scaling == kReferenceScale1x128) {
    const long long k_blocks = (p.k + kScaleBlock - 1) / kScaleBlock;
    v *= double(p.scale_a[row * k_blocks + kk / kScaleBlock]);
  } else if (p.scaling == kReferenceScaleRowwise) {
    v *= double(p.scale_a[row]);
  }
  return v;
}

// op(B)[kk][col] (op(B) is K x N), dequantised.
__device__ inline double load_b(const ReferenceGemmParams& p, long long kk, long long col) {
  const long long index = p.b_k_major ? col * p.ldb + kk : kk * p.ldb + col;
  double v = load_element(p.b, index, p.b_type);
  if (p.scaling == kReferenceScalePerTensor) {
    v *= double(p.scale_b[0]);
  } else if (p.scaling == kReferenceScaleBlock) {
    const long long k_blocks = (p.k + kScaleBlock - 1) / kScaleBlock;
    v *= double(p.scale_b[(col / kScaleBlock) * k_blocks + kk / kScaleBlock]);
  } else if (p.scaling == kReferenceScale1x128) {
    const long long k_blocks = (p.k + kScaleBlock - 1) / kScaleBlock;
    v *= double(p.scale_b[col * k_blocks + kk / kScaleBlock]);
  } else if (p.scaling == kReferenceScaleRowwise) {
    v *= double(p.scale_b[col]);
  }
  return v;
}

}  // namespace autogemm_reference

// grid = (ceil(N / 16), ceil(M / 16)), block = (16, 16).
extern "C" __global__ void __launch_bounds__(256)
autogemm_reference_gemm(const ReferenceGemmParams p) {
  using namespace autogemm_reference;
  // +1 column: threads of a warp read a_tile down a column; the pad spreads them over banks.
  __shared__ double a_tile[kTile][kTile + 1];
  __shared__ double b_tile[kTile][kTile + 1];
  const int tx = threadIdx.x, ty = threadIdx.y;
  const long long tile_row = (long long)blockIdx.y * kTile;
  const long long tile_col = (long long)blockIdx.x * kTile;
  const long long row = tile_row + ty, col = tile_col + tx;

  double acc = 0.0, acc_abs = 0.0;
  for (long long k0 = 0; k0 < p.k; k0 += kTile) {
    const long long a_k = k0 + tx, b_k = k0 + ty;
    a_tile[ty][tx] = (row < p.m && a_k < p.k) ? load_a(p, row, a_k) : 0.0;
    b_tile[ty][tx] = (b_k < p.k && col < p.n) ? load_b(p, b_k, col) : 0.0;
    __syncthreads();
#pragma unroll
    for (int kk = 0; kk < kTile; ++kk) {
      acc = fma(a_tile[ty][kk], b_tile[kk][tx], acc);
      acc_abs += fabs(a_tile[ty][kk] * b_tile[kk][tx]);
    }
    __syncthreads();
  }
  if (row >= p.m || col >= p.n) return;
  double out = p.alpha * acc, magnitude = fabs(p.alpha) * acc_abs;
  if (p.beta != 0.0) {
    const double beta_c = p.beta * load_element(p.c, row * p.ldc + col, p.c_type);
    out += beta_c;
    magnitude += fabs(beta_c);
  }
  p.d[row * p.n + col] = out;
  if (p.magnitude != nullptr) p.magnitude[row * p.n + col] = magnitude;
}
