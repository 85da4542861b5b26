#pragma once
// Generates the one-instruction wgmma wrapper for a configuration. wgmma.mma_async names every
// accumulator register as an operand (N/2 of them for an m64nNk16 fp32 tile), so the wrapper
// is written for the exact N instead of being a template over it.
#include <string>

#include "autogemm/problem.hpp"

namespace autogemm::codegen {

// A `static __device__ void mma(float (&d)[n/2], u64 desc_a, u64 desc_b)` member that issues
// wgmma.mma_async.sync.aligned.m64n{n}k16.f32.{type}.{type} with D += A * B, operands from
// shared-memory descriptors; a_mn_major/b_mn_major set imm-trans-a/b (16-bit types only).
std::string wgmma_mma_function(int n, DType input, bool a_mn_major, bool b_mn_major);

// FP8 (e4m3/e5m2, any mix): `static __device__ void mma(float (&d)[n/2], u64 desc_a,
// u64 desc_b, int accumulate)` issuing wgmma.mma_async.sync.aligned.m64n{n}k32.f32.{a}.{b};
// D = A * B + D when accumulate != 0, else D = A * B. Both operands K-major (no transpose).
std::string wgmma_fp8_mma_function(int n, DType a_type, DType b_type);

}  // namespace autogemm::codegen
