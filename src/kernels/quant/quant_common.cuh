#pragma once
// What the FP8 quantisation kernels share: element access, the warp maximum and the scale rule.
// The host model of the same arithmetic (tests/test_quantize_gpu.cpp) must match it bit for bit,
// so every rounding step here is explicit.
#include "ptx/convert.cuh"
#include "quant/quant_params.cuh"

namespace autogemm::quant {

constexpr int kGroup = AUTOGEMM_QUANT_GROUP;
constexpr int kWarp = 32;
constexpr int kPerLane = kGroup / kWarp;          // a warp covers one 128-wide group
constexpr float kE4m3Max = 448.0f;                // largest finite e4m3 (OCP FP8, E4M3FN)
constexpr float kSmallestNormal = 1.17549435e-38f;  // 2^-126, FLT_MIN

__device__ __forceinline__ float load_as_float(const void* base, long long index, int type) {
  if (type == kQuantBf16)
    return ptx::bf16_to_float(static_cast<const unsigned short*>(base)[index]);
  return static_cast<const float*>(base)[index];
}

// bf16 by round-to-nearest-even (cvt.rn), fp32 as is.
__device__ __forceinline__ void store_from_float(void* base, long long index, int type, float v) {
  if (type == kQuantBf16)
    static_cast<unsigned short*>(base)[index] = ptx::float_to_bf16(v);
  else
    static_cast<float*>(base)[index] = v;
}

// IEEE division and multiplication (round to nearest even), whatever NVRTC's flags say about
// '/' and whether it would contract a multiply into a neighbouring add.
__device__ __forceinline__ float divide_rn(float x, float y) {
  float r;
  asm("div.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
  return r;
}
__device__ __forceinline__ float multiply_rn(float x, float y) {
  float r;
  asm("mul.rn.f32 %0, %1, %2;" : "=f"(r) : "f"(x), "f"(y));
  return r;
}

__device__ __forceinline__ float warp_max(float v) {
  for (int offset = kWarp / 2; offset > 0; offset /= 2)
    v = fmaxf(v, __shfl_xor_sync(0xffffffffu, v, offset));
  return v;
}

// scale = amax / 448, so the group's largest magnitude maps onto e4m3's largest finite value;
// never below the smallest normal float: an all-zero group (amax = 0), or one so small that
// amax / 448 underflows, gets 2^-126, so 1 / scale stays finite (zeros stay exact zeros) and the
// scale is never subnormal.
__device__ __forceinline__ float group_scale(float amax) {
  return fmaxf(divide_rn(amax, kE4m3Max), kSmallestNormal);
}

// The e4m3 bytes of x / scale, two at a time: x times the rounded reciprocal of the scale (one
// division per group, a multiply per element, so the kernels stay memory-bound), rounded to
// nearest even and saturated by the conversion. `lo` lands in the lower byte.
__device__ __forceinline__ unsigned short quantize_pair(float lo, float hi, float inverse_scale) {
  return ptx::pack_e4m3x2(multiply_rn(lo, inverse_scale), multiply_rn(hi, inverse_scale));
}

}  // namespace autogemm::quant
