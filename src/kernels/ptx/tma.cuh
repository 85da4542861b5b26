#pragma once
// TMA (cp.async.bulk.tensor) wrappers, one instruction each (PTX ISA "cp.async.bulk.tensor";
// forms in hopper-facts.md 3.3). Coordinates are innermost first, signed; out-of-bounds
// elements of a load are zero-filled and out-of-bounds elements of a store are dropped, which
// is how the GEMM handles M, N and K tails.
#include "ptx/common.cuh"

namespace autogemm::ptx {

// Loads the descriptor into the TMA unit's cache once per CTA.
__device__ __forceinline__ void tma_prefetch_descriptor(const TensorMap* map) {
  asm volatile("prefetch.tensormap [%0];" ::"l"(reinterpret_cast<u64>(map)) : "memory");
}

// 2-D tile load into this CTA's shared memory; completes `bytes` on `bar` (the caller
// announced them with mbarrier_arrive_expect_tx).
__device__ __forceinline__ void tma_load_2d(void* smem_dst, const TensorMap* map, u64* bar,
                                            int c0, int c1) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      " [%0], [%1, {%3, %4}], [%2];" ::"r"(smem_addr(smem_dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1)
      : "memory");
}

// 2-D tile load multicast to every CTA whose bit is set in `cta_mask`: the data lands at the
// same CTA-relative offset in each, and each one's barrier at `bar`'s offset gets the bytes
// (sm_90a; hopper-facts.md 3.3).
__device__ __forceinline__ void tma_load_2d_multicast(void* smem_dst, const TensorMap* map, u64* bar,
                                                      int c0, int c1, unsigned short cta_mask) {
  asm volatile(
      "cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes"
      ".multicast::cluster [%0], [%1, {%3, %4}], [%2], %5;" ::"r"(smem_addr(smem_dst)),
      "l"(reinterpret_cast<u64>(map)), "r"(smem_addr(bar)), "r"(c0), "r"(c1), "h"(cta_mask)
      : "memory");
}

// 2-D tile store from shared memory; tracked by this thread's bulk async-group.
__device__ __forceinline__ void tma_store_2d(const TensorMap* map, const void* smem_src, int c0,
                                             int c1) {
  asm volatile("cp.async.bulk.tensor.2d.global.shared::cta.bulk_group [%0, {%2, %3}], [%1];" ::"l"(
                   reinterpret_cast<u64>(map)),
               "r"(smem_addr(smem_src)), "r"(c0), "r"(c1)
               : "memory");
}

__device__ __forceinline__ void tma_store_commit_group() {
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Waits until the smem sources of all but the newest `N` store groups have been read.
template <int N>
__device__ __forceinline__ void tma_store_wait_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}

// Waits until all but the newest `N` store groups are complete (writes visible).
template <int N>
__device__ __forceinline__ void tma_store_wait_all() {
  asm volatile("cp.async.bulk.wait_group %0;" ::"n"(N) : "memory");
}

// Orders the global-memory accesses of this thread's completed bulk (async-proxy) operations
// with its later generic-proxy ones (PTX ISA "fence.proxy.async"): a TMA store waited for, then a
// release that publishes it.
__device__ __forceinline__ void fence_proxy_async_global() {
  asm volatile("fence.proxy.async.global;" ::: "memory");
}

// Orders this thread's generic-proxy shared-memory writes before later async-proxy accesses
// (TMA store, wgmma) - required after st.shared and before the barrier (hopper-facts.md 4.4).
__device__ __forceinline__ void fence_proxy_async_shared() {
  asm volatile("fence.proxy.async.shared::cta;" ::: "memory");
}

}  // namespace autogemm::ptx
