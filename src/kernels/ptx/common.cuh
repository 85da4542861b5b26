#pragma once
// Basic device helpers shared by every kernel. Device code is compiled by NVRTC only; it
// includes no CUDA headers, so everything it needs is declared here.
#include "sm90/gemm_layout.cuh"

namespace autogemm::ptx {

using u32 = unsigned int;
using u64 = unsigned long long;

// The driver's CUtensorMap: 128 opaque bytes, 64-byte aligned (cuda.h). Passed to kernels as
// `const __grid_constant__ TensorMap` so TMA can read it from the parameter space.
struct alignas(64) TensorMap {
  u64 opaque[16];
};

// Shared-window address of a shared-memory pointer (what every .shared operand takes).
__device__ __forceinline__ u32 smem_addr(const void* p) {
  return static_cast<u32>(__cvta_generic_to_shared(p));
}

// A 4-byte shared-memory load the compiler keeps where it is written (asm volatile): the FP8
// scales must be read between the stage's full barrier and its release.
__device__ __forceinline__ float ld_shared_f32(const float* p) {
  float v;
  asm volatile("ld.shared.f32 %0, [%1];" : "=f"(v) : "r"(smem_addr(p)));
  return v;
}

// Two 8x8 matrices of 16-bit values, in the wgmma accumulator's layout, into shared memory with
// one instruction (PTX ISA stmatrix, sm_90): thread l holds row l / 4, columns 2 (l % 4) and the
// next of each matrix, packed (the lower column in the low half); threads 0-7 give the 16-byte
// row addresses of matrix 0, threads 8-15 those of matrix 1.
__device__ __forceinline__ void stmatrix_x2(u32 addr, u32 matrix0, u32 matrix1) {
  asm volatile("stmatrix.sync.aligned.m8n8.x2.shared.b16 [%0], {%1, %2};" ::"r"(addr),
               "r"(matrix0), "r"(matrix1)
               : "memory");
}

// tanh on the MUFU pipe, one instruction (PTX ISA tanh.approx.f32, sm_75+): relative error
// about 2^-11. The fused epilogue's SiLU and GELU(tanh) for 16-bit and FP8 outputs.
__device__ __forceinline__ float tanh_approx(float x) {
  float y;
  asm("tanh.approx.f32 %0, %1;" : "=f"(y) : "f"(x));
  return y;
}

__device__ __forceinline__ int warp_index_uniform() {
  // threadIdx.x / 32 broadcast from lane 0 so the compiler knows it is warp-uniform.
  return __shfl_sync(0xffffffffu, static_cast<int>(threadIdx.x) / 32, 0);
}

__device__ __forceinline__ u32 lane_index() { return threadIdx.x % 32; }

// The global nanosecond timer (PTX ISA "%globaltimer"; its update interval is up to the
// driver: 32 ns in the H100 tile traces) and the SM this thread runs
// on ("%smid"). The tile trace, and the bench's hold kernel (bench/gpu_hold.cuh).
__device__ __forceinline__ u64 global_timer_ns() {
  u64 t;
  asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t));
  return t;
}

__device__ __forceinline__ u32 sm_id() {
  u32 id;
  asm volatile("mov.u32 %0, %%smid;" : "=r"(id));
  return id;
}

}  // namespace autogemm::ptx
