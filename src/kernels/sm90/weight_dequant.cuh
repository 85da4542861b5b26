#pragma once
// Weight-only formats (autogemm/weights.hpp) turned into bf16 pairs in registers, on the way from
// a 16-byte load to mma.sync's A operand (sm90/decode_kernel.cuh). One thread, one 32-bit word.
#include "ptx/common.cuh"
#include "ptx/convert.cuh"

namespace autogemm::sm90 {

// Cfg::b_format: how B is stored.
inline constexpr int kWeightNone = 0;      // as b_type (bf16, fp16, e4m3)
inline constexpr int kWeightInt4 = 1;      // int4-g128: (q - 8) x bf16 scale per 128 of K
inline constexpr int kWeightInt4Zp = 2;    // int4-g128-zp: (q - zero) x bf16 scale per 128
inline constexpr int kWeightInt8 = 3;      // int8: q x fp32 scale per row
inline constexpr int kWeightMxfp4 = 4;     // mxfp4: e2m1(q) x 2^(e8m0 - 127) per 32 of K
inline constexpr int kWeightInt4Group = 128;
inline constexpr int kWeightMxGroup = 32;

// bf16 128 + v, exact for v in 0..127: the 7 mantissa bits of 2^7 count units.
inline constexpr unsigned kBf16x2Magic128 = 0x43004300u;

// Elements 2i, 2i + 1 of a 4-bit word (element 2i in bits 4i, 2i + 1 in bits 16 + 4i) as the
// bf16 pair (128 + q), exact: the mask puts q into the magic 128's mantissa. One lop3 ((a & b)
// | c, table 0xea) after the shift: written as C, ptxas kept the AND and the OR apart (two LOP3
// a pair, a third of the int4 kernel's instructions; Nsight Compute, H200, 2026-11-30). The 128
// + zero it carries is taken off the sum, not each element (int4_bias).
template <int i>
__device__ __forceinline__ unsigned int4_biased_pair(unsigned word) {
  static_assert(i >= 0 && i < 4, "a word holds 4 pairs");
  unsigned r;
  asm("lop3.b32 %0, %1, %2, %3, 0xea;" : "=r"(r) : "r"(word >> (4 * i)), "n"(0x000f000f), "n"(kBf16x2Magic128));
  return r;
}

// 128 + zero (zero 0..15) as an fp32, exactly: what each int4_biased_pair element carries
// above (q - zero). fp32's 2^7 has its unit at mantissa bit 16.
__device__ __forceinline__ float int4_bias(unsigned zero) { return __uint_as_float(0x43000000u | (zero << 16)); }

// An e8m0 scale byte as the bf16 2^(s - 127) in both halves of a bf16x2: the byte is bf16's
// exponent field (s = 0: the subnormal 2^-127; s = 255: NaN, as OCP MX says).
__device__ __forceinline__ unsigned e8m0_bf16x2(unsigned s) {
  const unsigned half = s == 0 ? 0x0040u : s == 255 ? 0x7fc0u : s << 7;
  return half | (half << 16);
}

// bf16 2^126 in both halves: an e2m1 code's 3 magnitude bits placed in bf16's bits 8..6 (the
// exponent's low 2 bits and the mantissa's first) read as 2^(e - 127) x (1 + m / 2), or for
// e = 0 the subnormal m x 2^-127; times 2^126 both are e2m1's value exactly.
inline constexpr unsigned kBf16x2Pow126 = 0x7e807e80u;

// Elements 2i, 2i + 1 of a 4-bit word (the int4 placement) as e2m1 values x `scale` (a bf16x2
// power of two, e8m0_bf16x2), exact while the product stays within bf16's normal range. The
// bf16 multiplies keep subnormals (mul.rn.bf16x2 has no flush to zero).
template <int i>
__device__ __forceinline__ unsigned mxfp4_pair(unsigned word, unsigned scale) {
  static_assert(i >= 0 && i < 4, "a word holds 4 pairs");
  const unsigned codes = word >> (4 * i);   // the pair's nibbles in bits 0..3 and 16..19
  const unsigned bits = ((codes << 12) & 0x80008000u) | ((codes << 6) & 0x01c001c0u);
  unsigned value, r;
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(value) : "r"(bits), "r"(kBf16x2Pow126));
  asm("mul.rn.bf16x2 %0, %1, %2;" : "=r"(r) : "r"(value), "r"(scale));
  return r;
}

// Elements 2i, 2i + 1 of an int8 word (4 little-endian signed bytes) as a bf16 pair, exactly:
// each byte, offset to unsigned, becomes the low byte of the float 2^23 + u (byte_perm), less
// 2^23 + 128; |q| <= 128 fits bf16's 8 significant bits. `offset_word` = word ^ 0x80808080.
template <int i>
__device__ __forceinline__ unsigned int8_pair(unsigned offset_word) {
  static_assert(i >= 0 && i < 2, "a word holds 2 pairs");
  // byte_perm selector: result bytes (byte j of the word, 0x00, 0x00, 0x4B) of 0x4B000000.
  const float lo = __uint_as_float(__byte_perm(offset_word, 0x4B000000u, 0x7540u + 2 * i)) -
                   8388736.0f;
  const float hi = __uint_as_float(__byte_perm(offset_word, 0x4B000000u, 0x7540u + 2 * i + 1)) -
                   8388736.0f;
  return ptx::pack_bf16x2(lo, hi);
}

}  // namespace autogemm::sm90
