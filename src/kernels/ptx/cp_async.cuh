#pragma once
// cp.async (sm_80+) wrappers, one instruction each (PTX ISA "cp.async",
// "cp.async.mbarrier.arrive"): small global -> shared copies whose completion an mbarrier
// tracks, for data too small or too scattered for TMA (the FP8 scales of one k-block).
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

// Makes `bar` receive one arrival once every cp.async this thread issued so far has landed.
// .noinc: the arrival counts against the count the barrier was initialised with (each copying
// thread is one of the expected arrivals), so consumers waiting on the phase see the data.
__device__ __forceinline__ void cp_async_mbarrier_arrive_noinc(u64* bar) {
  asm volatile("cp.async.mbarrier.arrive.noinc.shared::cta.b64 [%0];" ::"r"(smem_addr(bar))
               : "memory");
}

}  // namespace autogemm::ptx
