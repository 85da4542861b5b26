#pragma once
// Parameters of the A-scale transposition, shared by the host (src/runtime/scale_layout.cpp, g++)
// and the device (scale_transpose.cuh, NVRTC): plain C types only.

// src: M x k_blocks row-major (the caller's 1x128 A scales); dst: k_blocks x dst_ld, row kb
// holding scale(0..M-1, kb) then zeros up to dst_ld.
// The copy's row length: M rounded up to 4 floats, so every row starts 16-byte aligned. The
// spec (plan/kernel_spec.cpp) sizes the copy with it and the launcher lays it out with it.
inline constexpr long long scale_transpose_ld(long long m) { return (m + 3) / 4 * 4; }

struct ScaleTransposeParams {
  const float* src;
  float* dst;
  long long m, k_blocks;
  long long dst_ld;   // floats per dst row: M rounded up to 4 (16-byte rows)
};
