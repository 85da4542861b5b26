#pragma once
// Filling one pipeline stage with the (BLOCK_M, BLOCK_K) A tile and (BLOCK_N, BLOCK_K) B tile:
// by TMA (one elected thread) or, for the teaching steps of the ladder, by all consumer
// threads with plain loads.
#include "ptx/tma.cuh"
#include "sm90/gemm_common.cuh"

namespace autogemm::sm90 {

// Issues the TMA loads of one k-block into `stage`, completing on `bar` (the stage's full
// barrier; groups along K land a run's last k-block on their own barrier first): A's rows from
// `a_row0`, B's from `b_row0` (b_tile_row0), K from element `k0`. K-major operands are one box
// {64 (K), rows}; MN-major ones are rows/64 boxes {64 (M or N), BLOCK_K}, stored
// [rows/64][BLOCK_K][64] (hopper-facts.md 3.2). With multicast the cluster's rank-0 CTA loads
// the shared operand for both CTAs.
template <class Cfg>
__device__ __forceinline__ void issue_stage_loads(const SharedStorage<Cfg>& smem, int stage,
                                                  ptx::u64* bar, const ptx::TensorMap* tmap_a,
                                                  const ptx::TensorMap* tmap_b, int a_row0,
                                                  int b_row0, int k0, unsigned cta_rank) {
  using G = Geometry<Cfg>;
  ptx::mbarrier_arrive_expect_tx(bar, G::kStageTxBytes);

  auto load_operand = [&](unsigned char* dst, const ptx::TensorMap* map, int row0, int rows,
                          bool k_major, bool shared_by_cluster) {
    if (shared_by_cluster && cta_rank != 0) return;   // the leader multicasts it to us
    const unsigned short mask = (1u << G::kMulticastCtas) - 1;
    if (k_major) {
#pragma unroll
      for (int atom = 0; atom < G::kKAtoms; ++atom) {   // [atom][rows][128 B]
        unsigned char* atom_dst = dst + atom * rows * G::kAtomBytes;
        const int c0 = k0 + atom * G::kAtomElems;
        if (shared_by_cluster) ptx::tma_load_2d_multicast(atom_dst, map, bar, c0, row0, mask);
        else ptx::tma_load_2d(atom_dst, map, bar, c0, row0);
      }
    } else {
#pragma unroll
      for (int slab = 0; slab < rows / G::kAtomElems; ++slab) {
        unsigned char* slab_dst = dst + slab * Cfg::block_k * G::kAtomBytes;
        const int c0 = row0 + slab * G::kAtomElems;
        if (shared_by_cluster) ptx::tma_load_2d_multicast(slab_dst, map, bar, c0, k0, mask);
        else ptx::tma_load_2d(slab_dst, map, bar, c0, k0);
      }
    }
  };
  load_operand(smem.a(stage), tmap_a, a_row0, Cfg::block_m, Cfg::a_k_major,
               Cfg::multicast == 1);
  load_operand(smem.b(stage), tmap_b, b_row0, Cfg::block_n, Cfg::b_k_major, Cfg::multicast == 2);
}

// The first row of B a tile reads. M-grouped GEMM: B is [groups, N, K] seen as one (groups x
// N, K) matrix, and the tile's rows start at group x N (a tile that runs past N reads the next
// group's first rows; the epilogue drops those columns). Groups along K share one B.
template <class Cfg>
__device__ __forceinline__ int b_tile_row0(int n_tile, int group) {
  const int group_row0 = (Cfg::grouping == 1 || Cfg::grouping == 2) ? group * Cfg::n : 0;
  return group_row0 + n_tile * Cfg::block_n;
}

// Groups along K: zeroes tokens [valid, BLOCK_K) of both MN-major operands of `stage` (rows of
// 128 B in each 64-column slab, [slabs][BLOCK_K][128 B], so each slab's tail is one contiguous
// span whatever the swizzle), so tokens of the next run, or garbage, add nothing: both operands,
// as 0 x inf would be NaN. The calling warp's lanes share the 16-byte stores.
template <class Cfg>
__device__ __forceinline__ void zero_stage_tokens(const SharedStorage<Cfg>& smem, int stage,
                                                  int valid, int lane) {
  using G = Geometry<Cfg>;
  static_assert(!Cfg::a_k_major && !Cfg::b_k_major, "groups along K: token-major A and B");
  const int span_chunks = (Cfg::block_k - valid) * G::kAtomBytes / 16;   // per slab
  auto zero_operand = [&](unsigned char* base, int slabs) {
    unsigned char* span = base + valid * G::kAtomBytes;
    for (int slab = 0; slab < slabs; ++slab, span += Cfg::block_k * G::kAtomBytes)
      for (int chunk = lane; chunk < span_chunks; chunk += 32)
        *reinterpret_cast<uint4*>(span + chunk * 16) = make_uint4(0, 0, 0, 0);
  };
  zero_operand(smem.a(stage), Cfg::block_m / G::kAtomElems);
  zero_operand(smem.b(stage), Cfg::block_n / G::kAtomElems);
}

// Plain-load path (K-major A and B only): every consumer thread copies 16-byte chunks of the
// tile into the 128B-swizzled layout TMA would produce (chunk c of row r lands at chunk
// c ^ (r % 8); hopper-facts.md 1.2), zero-filling past the matrix edges.
template <class Cfg>
__device__ __forceinline__ void load_tile_threads(unsigned char* dst, const void* src_void,
                                                  long long ld, int num_rows_total, int row0,
                                                  int k0, int rows, int thread, int num_threads) {
  using G = Geometry<Cfg>;
  const unsigned short* src = static_cast<const unsigned short*>(src_void);
  const bool vector_ok = ((reinterpret_cast<unsigned long long>(src) | (ld * 2)) % 16) == 0;
  constexpr int kChunksPerRow = G::kAtomBytes / 16;
  for (int idx = thread; idx < rows * kChunksPerRow; idx += num_threads) {
    const int r = idx / kChunksPerRow, c = idx % kChunksPerRow;
    const int grow = row0 + r, gk = k0 + c * 8;
    uint4 v = make_uint4(0, 0, 0, 0);
    if (grow < num_rows_total) {
      const unsigned short* p = src + grow * ld + gk;
      if (vector_ok && gk + 8 <= Cfg::k) {
        v = *reinterpret_cast<const uint4*>(p);
      } else {
        unsigned short e[8];
#pragma unroll
        for (int i = 0; i < 8; ++i) e[i] = (gk + i < Cfg::k) ? p[i] : 0;
        v = make_uint4(e[0] | (e[1] << 16), e[2] | (e[3] << 16), e[4] | (e[5] << 16),
                       e[6] | (e[7] << 16));
      }
    }
    *reinterpret_cast<uint4*>(dst + r * G::kAtomBytes + ((c ^ (r % 8)) * 16)) = v;
  }
}

}  // namespace autogemm::sm90
