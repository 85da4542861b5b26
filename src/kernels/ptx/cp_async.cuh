#pragma once
// cp.async (sm_80+) wrappers, one instruction each (PTX ISA "cp.async",
// "cp.async.commit_group", "cp.async.wait_group", "cp.async.mbarrier.arrive"): small global ->
// shared copies, for data too small or too scattered for TMA (the FP8 scales of one k-block,
// an mbarrier tracking them) and for the decode family's per-warp rings (commit groups).
#include "ptx/common.cuh"

namespace autogemm::ptx {

// Copies 4 bytes from global `src` to shared `dst`, or writes 4 zero bytes when `valid` is
// false (src-size 0: nothing is read, the rest of cp-size is zero-filled). .ca: through L1,
// since neighbouring k-blocks read the same 32-byte sectors.
__device__ __forceinline__ void cp_async_4(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared::cta.global [%0], [%1], 4, %2;" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<u64>(src)), "r"(valid ? 4u : 0u)
               : "memory");
}

// Copies 16 bytes from global `src` to shared `dst`, or writes 16 zero bytes when `valid` is
// false. .cg: cached in L2 only, for bytes this SM reads once (the decode family's weights).
__device__ __forceinline__ void cp_async_16_cg(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.cg.shared::cta.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<u64>(src)), "r"(valid ? 16u : 0u)
               : "memory");
}

// The same through L1 (.ca), for bytes the SM's other warps read too (the activations).
__device__ __forceinline__ void cp_async_16_ca(void* dst, const void* src, bool valid) {
  asm volatile("cp.async.ca.shared::cta.global [%0], [%1], 16, %2;" ::"r"(smem_addr(dst)),
               "l"(reinterpret_cast<u64>(src)), "r"(valid ? 16u : 0u)
               : "memory");
}

// Closes the group of cp.async this thread issued since its last commit (an empty group when
// none: the ring's accounting stays one group per step).
__device__ __forceinline__ void cp_async_commit_group() {
  asm volatile("cp.async.commit_group;" ::: "memory");
}

// Waits until at most N of this thread's committed groups are pending. Other threads' copies
// are visible after their own wait and a barrier among the threads (__syncwarp for a warp).
template <int N>
__device__ __forceinline__ void cp_async_wait_group() {
  asm volatile("cp.async.wait_group %0;" ::"n"(N) : "memory");
}

// Makes `bar` receive one arrival once every cp.async this thread issued so far has landed.
// .noinc: the arrival counts against the count the barrier was initialised with (each copying
// thread is one of the expected arrivals), so consumers waiting on the phase see the data.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar))
               : "memory");
}

}  // namespace autogemm::ptx
