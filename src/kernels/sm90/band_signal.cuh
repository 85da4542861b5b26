#pragma once
// Row-band signals (Cfg::band_signals; GemmProblem::signal_bands): a band's flag becomes 1 once
// every tile of its rows is stored, so a caller can move those rows while the kernel computes
// the next bands (tensor-parallel GEMMs: multi/tp_exec.cpp).
//
// Each consumer warpgroup's leader (the thread that issues its TMA stores) counts the tiles it
// stored in the current band and adds the count to the band's counter when its next tile lies
// in another band, before storing that tile (its earlier stores finished a whole k-loop ago, so
// the wait for them is free), and once more when it runs out of tiles. Whoever brings a counter
// to the band's total (tiles x storing consumers) resets it for the next call and raises the
// flag. Memory order: the leader's bulk stores are complete (cp.async.bulk.wait_group 0) and
// ordered with its generic accesses (fence.proxy.async.global); the counter's acq_rel adds
// chain every adder's release to the last one, whose system-scope release then covers them all.
//
// The same bands gate C when GemmParams::c_band_flags is set (wait_c): a caller's C arrives band
// by band while the kernel runs (the tensor-parallel ring's partials).
#include "ptx/barrier.cuh"
#include "ptx/tma.cuh"
#include "sm90/gemm_params.cuh"

namespace autogemm::sm90 {

template <class Cfg>
struct BandSignal {
  static constexpr int kNumNTiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  // Stores per tile: each consumer stores its rows (ping-pong: one consumer the whole tile).
  static constexpr unsigned kStoresPerTile = Cfg::pingpong ? 1 : Cfg::num_consumers;

  int band = -1;        // the band of the tiles counted
  unsigned count = 0;   // stores counted and not yet added
  int c_ready = -1;      // band-gated C: the band whose flag this thread last saw up

  __device__ static int band_of(const GemmParams& p, int row0) {
    int b = 0;
    while (b + 1 < p.band_count && row0 >= p.band_end[b]) ++b;
    return b;
  }
  __device__ static unsigned total(const GemmParams& p, int b) {
    const int rows = p.band_end[b] - (b > 0 ? p.band_end[b - 1] : 0);
    return unsigned(rows / Cfg::block_m) * unsigned(kNumNTiles) * kStoresPerTile;
  }

  // Leader only, before storing the tile whose first row is row0.
  __device__ __forceinline__ void before_store(const GemmParams& p, int row0) {
    const int b = band_of(p, row0);
    if (b != band && count > 0) publish(p);
    band = b;
  }
  // Leader only, after storing the tile (n_tile); a cluster partner past D's edge stores nothing.
  __device__ __forceinline__ void stored(int row0, int n_tile, int m) {
    if (n_tile < kNumNTiles && row0 < m) ++count;
  }
  // Band-gated C (GemmParams::c_band_flags), by the thread that loads a tile's C (its consumer's
  // store leader) before it issues the load: wait until the band's flag is 1. The acquire at
  // system scope sees the copy engine's bytes the flag's stream memory operation published; the
  // proxy fence orders them before this thread's TMA loads (async proxy). Tiles run in band
  // order, so a late band stalls only the tiles that need it, and the flag is read once per
  // band, not per tile.
  __device__ __forceinline__ void wait_c(const GemmParams& p, int row0) {
    if (p.c_band_flags == nullptr) return;
    const int b = band_of(p, row0);
    if (b == c_ready) return;
    const unsigned* flag = p.c_band_flags + b;
    while (ptx::load_acquire_sys(flag) == 0u) __nanosleep(64);
    ptx::fence_proxy_async_global();
    c_ready = b;
  }

  // Leader only: adds the count to the band's counter; the last adder raises the flag.
  __device__ __forceinline__ void publish(const GemmParams& p) {
    if (count > 0 && p.band_flags != nullptr) {
      ptx::tma_store_wait_all<0>();
      ptx::fence_proxy_async_global();
      const unsigned old = ptx::atomic_add_acq_rel_gpu(p.band_counters + band, count);
      if (old + count == total(p, band)) {
        ptx::store_relaxed_gpu(p.band_counters + band, 0);
        ptx::store_release_sys(p.band_flags + band, 1);
      }
    }
    count = 0;
  }
};

}  // namespace autogemm::sm90
