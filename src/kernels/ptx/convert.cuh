#pragma once
// Conversions between fp32 and 16-bit floats without the CUDA headers (PTX "cvt").
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

}  // namespace autogemm::ptx
