#pragma once
// wgmma wrappers (PTX ISA "Asynchronous Warpgroup Level Matrix Multiply", sm_90a). The
// mma_async instruction itself has one operand per accumulator register, so its wrapper is
// generated for the exact N of a configuration by the host (src/codegen/wgmma_asm.cpp) and
// handed to the kernel as Config::mma; the fence/commit/wait wrappers live here.
#include "ptx/common.cuh"

namespace autogemm::ptx {

// Orders earlier register accesses (accumulators) before the next wgmma.mma_async.
__device__ __forceinline__ void wgmma_fence() {
  asm volatile("wgmma.fence.sync.aligned;" ::: "memory");
}

// Closes the group of wgmma.mma_async issued since the last commit.
__device__ __forceinline__ void wgmma_commit_group() {
  asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory");
}

// Waits until at most N committed groups are pending.
template <int N>
__device__ __forceinline__ void wgmma_wait_group() {
  asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}

// Keeps the compiler from moving accumulator reads/writes across the async region
// (CUTLASS warpgroup_fence_operand).
__device__ __forceinline__ void fence_operand(float& r) { asm volatile("" : "+f"(r)::"memory"); }

// Shared-memory matrix descriptor (hopper-facts.md 1.1): start, LBO, SBO in 16-byte units,
// base offset 0 (every tile starts on its swizzle repeat), layout type in bits 62-63.
__device__ __forceinline__ u64 make_smem_desc(u32 smem_address, u32 leading_bytes,
                                              u32 stride_bytes, u32 layout_code) {
  return static_cast<u64>((smem_address & 0x3FFFF) >> 4) |
         (static_cast<u64>((leading_bytes & 0x3FFFF) >> 4) << 16) |
         (static_cast<u64>((stride_bytes & 0x3FFFF) >> 4) << 32) |
         (static_cast<u64>(layout_code) << 62);
}

// A shared-memory descriptor from its two words: the low one holds the start address (bits
// 0-13, address >> 4) and the leading byte offset (bits 16-29), the high one the stride byte
// offset and the layout, constants of a tile. Moving the low word by `offset >> 4` costs one
// integer add per wgmma instead of rebuilding the descriptor from the address; shared memory
// ends below 256 KB, so the start field never carries into the leading byte offset.
__device__ __forceinline__ u64 smem_desc_join(u32 lo, u32 hi) {
  return (static_cast<u64>(hi) << 32) | lo;
}

// setmaxnreg: move registers from the producer warpgroup to the consumers (all 4 warps of a
// warpgroup execute it; sm_90a; hopper-facts.md 5).
template <int N>
__device__ __forceinline__ void setmaxnreg_inc() {
  asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(N));
}
template <int N>
__device__ __forceinline__ void setmaxnreg_dec() {
  asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(N));
}

}  // namespace autogemm::ptx
