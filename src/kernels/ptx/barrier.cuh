#pragma once
// mbarrier and named-barrier wrappers: one PTX instruction each (PTX ISA "mbarrier",
// "bar.sync", "barrier.cluster"; protocol in hopper-facts.md section 4).
#include "ptx/common.cuh"

namespace autogemm::ptx {

// --- thread scope -------------------------------------------------------------------------

// Sets phase 0 and the expected arrival count (1 .. 2^20-1).
__device__ __forceinline__ void mbarrier_init(u64* bar, u32 count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" ::"r"(smem_addr(bar)), "r"(count));
}

// Makes barrier initialisation visible to the async proxy and to other CTAs of the cluster.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Announces `bytes` of TMA traffic for the current phase, then arrives once.
__device__ __forceinline__ void mbarrier_arrive_expect_tx(u64* bar, u32 bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;" ::"r"(smem_addr(bar)),
               "r"(bytes)
               : "memory");
}

__device__ __forceinline__ void mbarrier_arrive(u64* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" ::"r"(smem_addr(bar)) : "memory");
}

// Arrives on the barrier at the same offset in CTA `cta_rank` of the cluster (mapa + remote
// arrive; a remote arrive cannot return a state, hence `_`). The default .release.cta form, as
// CUTLASS's ClusterBarrier::arrive(cta_id) uses: the arrival only says "this stage's wgmmas
// are done", which the wgmma wait already guarantees; .release.cluster made every 2-CTA
// cluster kernel 2.5x slower on an H200 (~300 TFLOP/s against 744-785 with this form): each
// arrive waited for all of the thread's earlier memory operations to be visible cluster-wide.
__device__ __forceinline__ void mbarrier_arrive_cluster(u64* bar, u32 cta_rank) {
  asm volatile(
      "{\n\t.reg .b32 remote;\n\t"
      "mapa.shared::cluster.u32 remote, %0, %1;\n\t"
      "mbarrier.arrive.shared::cluster.b64 _, [remote];\n\t}" ::"r"(smem_addr(bar)),
      "r"(cta_rank)
      : "memory");
}

// Blocks until the phase with parity `parity` has completed. try_wait may return false after a
// system time limit, hence the loop; 0x989680 is the suspend-time hint CUTLASS uses.
__device__ __forceinline__ void mbarrier_wait(u64* bar, u32 parity) {
  asm volatile(
      "{\n\t.reg .pred done;\n\t"
      "WAIT_%=:\n\t"
      "mbarrier.try_wait.parity.shared::cta.b64 done, [%0], %1, 0x989680;\n\t"
      "@!done bra WAIT_%=;\n\t}" ::"r"(smem_addr(bar)),
      "r"(parity)
      : "memory");
}

// --- CTA scope ------------------------------------------------------------------------------

// Named barrier over `num_threads` threads (a multiple of 32); id 0 is __syncthreads'.
__device__ __forceinline__ void named_barrier_sync(u32 id, u32 num_threads) {
  asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(num_threads) : "memory");
}

// Arrive on named barrier `id` without waiting: the barrier completes when `num_threads` threads
// (arriving plus syncing) are in (PTX ISA "bar.arrive"; producer/consumer hand-offs).
__device__ __forceinline__ void named_barrier_arrive(u32 id, u32 num_threads) {
  asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(num_threads) : "memory");
}

// Named barrier with an OR reduction: waits like bar.sync and returns whether any of the
// `num_threads` threads passed true (PTX ISA "barrier.red": bar.red.or.pred).
__device__ __forceinline__ bool named_barrier_or(u32 id, u32 num_threads, bool value) {
  u32 any;
  asm volatile(
      "{\n\t.reg .pred in, out;\n\t"
      "setp.ne.u32 in, %1, 0;\n\t"
      "bar.red.or.pred out, %2, %3, in;\n\t"
      "selp.u32 %0, 1, 0, out;\n\t}"
      : "=r"(any)
      : "r"(static_cast<u32>(value)), "r"(id), "r"(num_threads)
      : "memory");
  return any != 0;
}

// --- cluster scope --------------------------------------------------------------------------

__device__ __forceinline__ u32 cluster_cta_rank() {
  u32 rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// Every thread of every CTA in the cluster arrives and waits (release/acquire).
__device__ __forceinline__ void cluster_sync() {
  asm volatile("barrier.cluster.arrive.release.aligned;\n\t"
               "barrier.cluster.wait.acquire.aligned;" ::: "memory");
}

// --- GPU scope ------------------------------------------------------------------------------

// *counter += value, returning the old value; relaxed at GPU scope (PTX ISA "atom"): it orders
// nothing else, it only counts.
__device__ __forceinline__ u32 atomic_add_relaxed_gpu(u32* counter, u32 value) {
  u32 old;
  asm volatile("atom.relaxed.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(counter), "r"(value)
               : "memory");
  return old;
}

// A flag store that publishes what this thread (and, through a CTA barrier before it, its CTA)
// wrote before: fence.acq_rel.gpu, then a relaxed store (PTX ISA memory consistency model,
// "release pattern").
__device__ __forceinline__ void store_release_gpu(u32* flag, u32 value) {
  asm volatile("fence.acq_rel.gpu;\n\tst.relaxed.gpu.global.u32 [%0], %1;" ::"l"(flag), "r"(value)
               : "memory");
}

// *counter += value, returning the old value, with acquire-release semantics at GPU scope: the
// thread that brings a count to its total sees everything the earlier adders released.
__device__ __forceinline__ u32 atomic_add_acq_rel_gpu(u32* counter, u32 value) {
  u32 old;
  asm volatile("atom.acq_rel.gpu.global.add.u32 %0, [%1], %2;"
               : "=r"(old)
               : "l"(counter), "r"(value)
               : "memory");
  return old;
}

// A plain (relaxed) store of a word other threads of the GPU read or add to.
__device__ __forceinline__ void store_relaxed_gpu(u32* word, u32 value) {
  asm volatile("st.relaxed.gpu.global.u32 [%0], %1;" ::"l"(word), "r"(value) : "memory");
}

// The release pattern at system scope: a flag that a stream memory operation or another GPU waits
// for (cuStreamWaitValue32) publishes what this thread saw and wrote before it.
__device__ __forceinline__ void store_release_sys(u32* flag, u32 value) {
  asm volatile("fence.acq_rel.sys;\n\tst.relaxed.sys.global.u32 [%0], %1;" ::"l"(flag), "r"(value)
               : "memory");
}

// A flag load at system scope: the flag's writer is a stream memory operation or another GPU
// (cuStreamWriteValue32 after a peer copy), and what it published becomes visible to this thread.
__device__ __forceinline__ u32 load_acquire_sys(const u32* flag) {
  u32 value;
  asm volatile("ld.acquire.sys.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// A flag load that makes what the flag's writer published visible to this thread (and, through a
// CTA barrier after it, to its CTA) (PTX ISA "ld.acquire").
__device__ __forceinline__ u32 load_acquire_gpu(const u32* flag) {
  u32 value;
  asm volatile("ld.acquire.gpu.global.u32 %0, [%1];" : "=r"(value) : "l"(flag) : "memory");
  return value;
}

// A 16-byte global store, and a 16-byte global load cached in L2 only (.cg: never a stale L1
// line of data another SM wrote during this kernel).
__device__ __forceinline__ void st_global_v4(float* p, float x, float y, float z, float w) {
  asm volatile("st.global.v4.f32 [%0], {%1, %2, %3, %4};" ::"l"(p), "f"(x), "f"(y), "f"(z), "f"(w)
               : "memory");
}

__device__ __forceinline__ float4 ld_global_cg_v4(const float* p) {
  float4 v;
  asm volatile("ld.global.cg.v4.f32 {%0, %1, %2, %3}, [%4];"
               : "=f"(v.x), "=f"(v.y), "=f"(v.z), "=f"(v.w)
               : "l"(p)
               : "memory");
  return v;
}

// --- grid scope (programmatic dependent launch, sm_90+) ----------------------------------

// Lets the grid launched after this one as a programmatic dependent start once every CTA of
// this grid has executed it (or exited) (PTX ISA "griddepcontrol"; a no-op without one).
__device__ __forceinline__ void grid_launch_dependents() {
  asm volatile("griddepcontrol.launch_dependents;" ::: "memory");
}

// In a programmatic dependent: waits until the grids it depends on have completed and their
// memory operations are visible (PTX ISA "griddepcontrol").
__device__ __forceinline__ void grid_dependency_wait() {
  asm volatile("griddepcontrol.wait;" ::: "memory");
}

}  // namespace autogemm::ptx
