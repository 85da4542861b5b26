#pragma once
// Conversions between fp32 and 16-bit or 8-bit floats without the CUDA headers (PTX "cvt").
#include "ptx/common.cuh"

namespace autogemm::ptx {

// Packs two floats into bf16x2 / f16x2 with round-to-nearest-even; `lo` goes to the low half
// (the lower column address).
__device__ __forceinline__ u32 pack_bf16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.bf16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ u32 pack_f16x2(float lo, float hi) {
  u32 r;
  asm("cvt.rn.f16x2.f32 %0, %1, %2;" : "=r"(r) : "f"(hi), "f"(lo));
  return r;
}
__device__ __forceinline__ float bf16_to_float(unsigned short b) {
  return __uint_as_float(static_cast<u32>(b) << 16);
}
__device__ __forceinline__ float f16_to_float(unsigned short h) {
  float f;
  asm("{\n\t.reg .b16 h;\n\tmov.b16 h, %1;\n\tcvt.f32.f16 %0, h;\n\t}" : "=f"(f) : "h"(h));
  return f;
}
__device__ __forceinline__ unsigned short float_to_bf16(float f) {
  return static_cast<unsigned short>(pack_bf16x2(f, 0.f) & 0xFFFF);
}
__device__ __forceinline__ unsigned short float_to_f16(float f) {
  return static_cast<unsigned short>(pack_f16x2(f, 0.f) & 0xFFFF);
}

// Two floats to OCP FP8 e4m3 (E4M3FN) bytes with round-to-nearest-even, saturating: magnitudes
// above 448 (the largest finite e4m3) and infinities become +-448, NaN stays NaN (PTX ISA, cvt:
// .satfinite is required for f8x2 destinations). `a` lands in the upper byte, `b` in the lower,
// so `lo` goes to the lower byte (the lower address once stored). sm_89 and later.
__device__ __forceinline__ unsigned short pack_e4m3x2(float lo, float hi) {
  unsigned short r;
  asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(r) : "f"(hi), "f"(lo));
  return r;
}
// One e4m3 byte to float, exactly: every e4m3 value is an f16 value, so cvt.rn.f16x2.e4m3x2
// (lower byte to the lower half) and f16 -> f32 lose nothing. sm_89 and later.
__device__ __forceinline__ float e4m3_to_float(unsigned char b) {
  u32 halves;
  const unsigned short pair = b;
  asm("cvt.rn.f16x2.e4m3x2 %0, %1;" : "=r"(halves) : "h"(pair));
  return f16_to_float(static_cast<unsigned short>(halves & 0xFFFFu));
}

}  // namespace autogemm::ptx
