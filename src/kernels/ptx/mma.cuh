#pragma once
// Warp-level matrix multiply (mma.sync) and the loads of the decode family
// (sm90/decode_kernel.cuh). One PTX instruction per wrapper. The mma and global loads are not
// volatile: each is a pure function of its operands (the loads read memory no thread writes
// during the kernel), so the compiler may schedule the loads of one step ahead of the previous
// step's multiplies. ldmatrix is: it reads a shared ring that the warp rewrites.
//
// Fragments (PTX ISA "Matrix Fragments for mma.m16n8k16 / mma.m16n8k32"), with
// group = lane / 4 and pair = lane % 4:
//   A (16 x K_INSTR, row-major): 4 registers. Register 0 holds row `group`, register 1 row
//     `group + 8`, both at the first K quarter-pair of this lane; registers 2 and 3 the same
//     rows at K + K_INSTR / 2. 16-bit inputs: 2 elements per register at k = 2 * pair;
//     e4m3: 4 elements per register at k = 4 * pair.
//   B (K_INSTR x 8, column-major: each column contiguous in K): 2 registers, column `group`,
//     register 0 at the same k as A's register 0, register 1 at K_INSTR / 2 further.
//   C/D (16 x 8 fp32): d0, d1 at row `group`, columns 2 * pair and 2 * pair + 1; d2, d3 the
//     same columns at row `group + 8`.
#include "ptx/common.cuh"

namespace autogemm::ptx {

// D = A * B + D, bf16 inputs, fp32 accumulators (sm_80+).
__device__ __forceinline__ void mma_m16n8k16_bf16(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3,
                                                  u32 b0, u32 b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// D = A * B + D, fp16 inputs, fp32 accumulators (sm_80+).
__device__ __forceinline__ void mma_m16n8k16_f16(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3,
                                                 u32 b0, u32 b1) {
  asm(
      "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// D = A * B + D, e4m3 inputs, fp32 accumulators (sm_89+, PTX ISA 8.4).
__device__ __forceinline__ void mma_m16n8k32_e4m3(float (&d)[4], u32 a0, u32 a1, u32 a2, u32 a3,
                                                  u32 b0, u32 b1) {
  asm(
      "mma.sync.aligned.m16n8k32.row.col.f32.e4m3.e4m3.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
      "{%8, %9}, {%0, %1, %2, %3};"
      : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3])
      : "r"(a0), "r"(a1), "r"(a2), "r"(a3), "r"(b0), "r"(b1));
}

// 16 bytes read once and never again by this SM (the decode family's weights): through the
// non-coherent path without allocating in L1 (PTX ISA "ld", .L1::no_allocate), so they do not
// evict the activations every warp re-reads. Zero where `valid` is false.
__device__ __forceinline__ uint4 ld_global_stream_v4(const void* p, bool valid) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (valid)
    asm("ld.global.nc.L1::no_allocate.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  return v;
}

// 16 bytes that other warps of the SM read too (the decode family's activations): through the
// non-coherent path, kept in L1. Zero where `valid` is false.
__device__ __forceinline__ uint4 ld_global_shared_v4(const void* p, bool valid) {
  uint4 v = make_uint4(0, 0, 0, 0);
  if (valid)
    asm("ld.global.nc.v4.u32 {%0, %1, %2, %3}, [%4];"
                 : "=r"(v.x), "=r"(v.y), "=r"(v.z), "=r"(v.w)
                 : "l"(p));
  return v;
}

// A weight's scale or zero (sm90/weight_dequant.cuh): 2 or 1 bytes through the non-coherent
// path, zero-extended. Zero where `valid` is false.
__device__ __forceinline__ u32 ld_global_nc_u16(const void* p, bool valid) {
  u32 v = 0;
  if (valid) asm("ld.global.nc.u16 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}
__device__ __forceinline__ u32 ld_global_nc_u8(const void* p, bool valid) {
  u32 v = 0;
  if (valid) asm("ld.global.nc.u8 %0, [%1];" : "=r"(v) : "l"(p));
  return v;
}

// Four 8 x 16-byte matrices from shared memory (PTX ISA "ldmatrix", .x4, b16): lanes 8i..8i+7
// give the row addresses of matrix i, and lane (group, pair) receives word `pair` of row `group`
// of each matrix, one register per matrix: the fragment layout above, for 16-bit and (in bytes)
// e4m3 inputs alike. volatile: the ring's stage is rewritten after the warp's barrier.
__device__ __forceinline__ void ldmatrix_x4(u32 (&r)[4], const void* row) {
  asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0, %1, %2, %3}, [%4];"
               : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
               : "r"(smem_addr(row))
               : "memory");
}

}  // namespace autogemm::ptx
