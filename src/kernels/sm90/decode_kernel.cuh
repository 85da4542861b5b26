#pragma once
// The decode family: D = A * B^T when A has few rows (M <= 32 in practice: tokens in flight).
// There the time is B's bytes crossing from DRAM once, and a 64-row wgmma tile would waste
// 75-98% of its work and pace itself by the per-SM delivery of a tile ring. So this kernel
// streams B straight from global memory into registers, 16 bytes per lane, and multiplies with
// warp-level mma.sync, computing D^T = B * A^T: B's rows are the instruction's 16-row side and
// A's rows its 8-wide side, so M = 1 wastes 7/8 of an instruction that costs almost nothing
// beside the bytes.
//
// Work split:
//   CTA    128 threads, one (block_m rows of A) x (block_n rows of B) tile and one of split_k
//          K ranges: work item = (m_tile fastest, n_tile, split), one CTA each.
//   warp   16 rows of B (weight-only B: row_tiles x 16); the CTA's block_n / that warps along
//          N, and the rest (4 / that) split the CTA's K range, step by step interleaved, so the
//          CTA reads one contiguous span at a time.
//   step   block_k elements of K per warp; for each 64 bytes of K ("chunk") two mma.sync per
//          8-row group of A. How a step reaches the fragments is the config's num_stages:
//   registers (num_stages = 1): every lane loads 16 bytes of its two B rows and of each of its
//          A rows per chunk straight into fragment registers. Two steps are in registers at
//          once: the next one's loads are issued before this one's multiplies. K order inside a
//          chunk: lane (group, pair) loads elements [pair * V, pair * V + V) (V = 16 bytes of
//          elements); mma's fragments want k = 2 * pair (+8) for 16-bit inputs and k = 4 *
//          pair (+16) for e4m3 (ptx/mma.cuh), and feeding both operands the same loaded words
//          reorders K identically on both sides, which a dot product does not notice. But a
//          warp's load instruction then touches 64 bytes of each of 8 rows: half lines.
//   warp ring (num_stages >= 2): each warp copies its steps with cp.async into a ring of
//          num_stages stages of its own in shared memory, num_stages - 1 steps ahead, lane l
//          taking 16-byte pieces l, l + 32, ... of the step's rows, so an instruction copies
//          whole 128-byte lines; ldmatrix turns a stage into fragments in plain K order. The
//          ring is the warp's alone: cp.async.wait_group and __syncwarp order it, no CTA
//          barrier or mbarrier.
// Sums are fixed-order: the K-splitting warps meet in shared memory (warp 0's share first),
// the CTAs of a split-K tile in a global workspace (split 0 first), as in split_k_reduce.cuh,
// so D is the same bits whichever CTA finishes last.
#include "ptx/barrier.cuh"
#include "ptx/convert.cuh"
#include "ptx/cp_async.cuh"
#include "ptx/mma.cuh"
#include "sm90/fp8_scales.cuh"
#include "sm90/fused_epilogue.cuh"
#include "sm90/gemm_params.cuh"
#include "sm90/weight_dequant.cuh"

namespace autogemm::sm90 {

// Cfg::grouping of the decode family: 0 (one GEMM) or masked (GemmProblem::grouping's 2).
inline constexpr int kDecodeGroupedMasked = 2;

template <class Cfg>
struct DecodeGeometry {
  static constexpr int kThreads = 128;
  static constexpr int kWarps = kThreads / 32;
  // Weight-only B: a warp multiplies row_tiles 16-row tiles of B (the mma's M side) against
  // each A fragment it loads (plan/rules.hpp decode_row_tiles says when and why).
  static constexpr int kRowTiles = Cfg::row_tiles;
  static constexpr int kRowsPerWarp = 16 * kRowTiles;
  static constexpr int kWarpsN = Cfg::block_n / kRowsPerWarp;
  static constexpr int kWarpsK = kWarps / kWarpsN;
  static constexpr int kGroupsM = Cfg::block_m / 8;     // the mma's 8-wide side: rows of A
  static constexpr int kAccGroups = kRowTiles * kGroupsM;   // (row tile, 8-row group of A)
  static constexpr int kAccum = kAccGroups * 4;         // fp32 accumulators per lane
  static constexpr int kVectorElems = 16 / Cfg::in_bytes;   // one 16-byte load of A
  // Weight-only B (Cfg::b_format, sm90/weight_dequant.cuh): its elements are 4 or 8 bits, so a
  // lane's 16 bytes of a B row span kSpan elements of K, and the lane loads A's kAVectors
  // vectors over the same span. Otherwise B is A's type and kSpan = kVectorElems.
  static constexpr bool kWeightOnly = Cfg::b_format != kWeightNone;
  static constexpr int kBBits = Cfg::b_format == kWeightInt8   ? 8
                                : Cfg::b_format != kWeightNone ? 4
                                                               : 8 * Cfg::in_bytes;
  static constexpr int kSpan = 128 / kBBits;
  static constexpr int kAVectors = kSpan * Cfg::in_bytes / 16;
  static constexpr int kChunkElems = 4 * kSpan;             // 64 bytes of B's row per 4 lanes
  static constexpr int kChunks = Cfg::block_k / kChunkElems;  // chunks per step
  static constexpr int kSteps = (Cfg::k + Cfg::block_k - 1) / Cfg::block_k;
  static constexpr int kNTiles = (Cfg::n + Cfg::block_n - 1) / Cfg::block_n;
  static constexpr int kScaleBlocksK = (Cfg::k + kScaleBlock - 1) / kScaleBlock;
  static constexpr int kChunksPerScaleBlock = kScaleBlock / kChunkElems;   // e4m3: 2

  static_assert(Cfg::block_n == 16 || Cfg::block_n == 32 || Cfg::block_n == 64,
                "block_n: 1, 2 or 4 warps of 16 rows along N");
  static_assert(kRowTiles == 1 || (kRowTiles == 2 && Cfg::b_format != kWeightNone &&
                                   Cfg::block_n >= 32),
                "row tiles: two only for weight-only B, whole warps of 32 rows along N");
  static_assert(Cfg::block_m % 8 == 0 && Cfg::block_m >= 8 && Cfg::block_m <= 32,
                "block_m: whole 8-row groups of A, at most 4");
  static_assert(Cfg::block_k % kChunkElems == 0, "block_k: whole 64-byte chunks");
  static_assert(Cfg::k % kVectorElems == 0, "K: whole 16-byte vectors per row");
  static_assert(!kWeightOnly || (Cfg::k % kSpan == 0 && Cfg::num_stages <= 4 &&
                                 Cfg::in_kind == 0 && !Cfg::block_scaled),
                "weight-only B: bf16 A, 1..4 steps of B in flight in registers, whole 16-byte "
                "spans of B's rows");
  static_assert(Cfg::b_format != kWeightInt4 && Cfg::b_format != kWeightInt4Zp ||
                    kChunkElems == kWeightInt4Group,
                "int4: a chunk is one scale group");
  static_assert(Cfg::b_format != kWeightMxfp4 || kSpan == kWeightMxGroup,
                "mxfp4: a lane's span is one 32-element scale group");
  static_assert(!Cfg::block_scaled || Cfg::block_k % kScaleBlock == 0,
                "block-scaled FP8: a step holds whole 128-element scale blocks");
  static_assert(Cfg::grouping == 0 || (Cfg::grouping == kDecodeGroupedMasked && kWeightOnly &&
                                        !FusedEpilogue<Cfg>::kFused),
                "grouped decode: the masked layout, weight-only B, no fused epilogue");
  static_assert(Cfg::split_k >= 1 && Cfg::split_k <= 32, "one polling lane per split");
  static_assert(Cfg::ctas_per_sm >= 1 && Cfg::ctas_per_sm <= 16, "CTAs one SM holds");
  static_assert(Cfg::num_stages >= 1 && Cfg::num_stages <= 8, "registers (1) or a warp ring");
};

// The warp ring (num_stages >= 2): per warp, num_stages stages of (B's 16 rows, then A's
// block_m rows) x one step of K. A row's 16-byte pieces are stored at piece ^ (row % 8), so the
// 8 rows an ldmatrix matrix reads lie in 8 different bank groups (rows are whole 128-byte
// lines apart: the rules ask block_k x in_bytes >= 128).
template <class Cfg>
struct DecodeRing {
  static constexpr int kRowBytes = Cfg::block_k * Cfg::in_bytes;
  static constexpr int kPieces = kRowBytes / 16;                     // 16-byte pieces a row
  static constexpr int kRows = 16 + Cfg::block_m;                    // B's, then A's
  // Block-scaled FP8: the step's scales travel with it (a global load per step in the
  // multiply would put an L2 round trip in every step's chain): B's one per 128 elements of K,
  // then A's block_m rows of them.
  static constexpr int kScaleBlocks = Cfg::block_scaled ? Cfg::block_k / kScaleBlock : 0;
  static constexpr int kScaleFloats = (1 + Cfg::block_m) * kScaleBlocks;
  static constexpr int kScaleBytes = (kScaleFloats * 4 + 15) / 16 * 16;
  static constexpr int kStageBytes = kRows * kRowBytes + kScaleBytes;
  static constexpr int kWarpBytes = Cfg::num_stages * kStageBytes;
  static constexpr int kBCopies = 16 * kPieces / 32;                 // per lane and step
  static constexpr int kACopies = Cfg::block_m * kPieces / 32;
  static_assert(Cfg::num_stages == 1 || (kRowBytes % 128 == 0 && kPieces % 8 == 0),
                "warp ring: a step of a row is whole 128-byte lines (the swizzle's 8 pieces)");
  // The launch's dynamic shared memory is the host's count (plan/decode_rules.cpp
  // decode_ring_bytes): the two must describe the same layout.
  static_assert(Cfg::ring_bytes == (Cfg::num_stages > 1 ? 4 * kWarpBytes : 0),
                "the launch's shared memory differs from this layout");

  __device__ static int offset(int row, int piece) {
    return row * kRowBytes + ((piece ^ (row & 7)) << 4);
  }
};

// One chunk's operands in fragment registers (ptx/mma.cuh): for each of its two mma.sync (h:
// the chunk's first or second 32 bytes of K), B's four A-operand registers and, per 8-row
// group of A, two B-operand registers.
template <class Cfg>
struct DecodeChunkFragments {
  unsigned b[2][4];                                   // (h, a0..a3): B rows g, g + 8
  unsigned a[DecodeGeometry<Cfg>::kGroupsM][2][2];    // (group, h, b0..b1): A row of column g
};

template <class Cfg>
__device__ __forceinline__ void decode_mma(float (&d)[4], const unsigned (&b)[4],
                                           const unsigned (&a)[2]) {
  if constexpr (Cfg::in_kind == 2)
    ptx::mma_m16n8k32_e4m3(d, b[0], b[1], b[2], b[3], a[0], a[1]);
  else if constexpr (Cfg::in_kind == 1)
    ptx::mma_m16n8k16_f16(d, b[0], b[1], b[2], b[3], a[0], a[1]);
  else
    ptx::mma_m16n8k16_bf16(d, b[0], b[1], b[2], b[3], a[0], a[1]);
}

// Where one lane works: its tile, its two rows of B and its rows of A.
template <class Cfg>
struct DecodeLane {
  using G = DecodeGeometry<Cfg>;
  int lane, group, pair, warp_n, warp_k;
  int m_tile, n_tile, split;
  int n_first;                          // B row of the warp's first of 16 rows
  int b_scales;                         // block-scaled FP8: index of the warp's first B scale
  const unsigned char* b_rows[2 * G::kRowTiles];   // rows n_first + 16 t + group (+ 8) (clamped)
  bool b_valid[2 * G::kRowTiles];
  const unsigned char* a_rows[G::kGroupsM];   // rows m_tile * block_m + 8 j + group (clamped)
  bool a_valid[G::kGroupsM];
  int b_row[2 * G::kRowTiles];          // weight-only: rows 16 t + g (+ 8) (clamped), for the scales
  int m_end;                            // rows of A and D below it are the tile's to compute
                                        // (masked: the group's first row + its valid rows)

  __device__ DecodeLane(const GemmParams& params) {
    lane = threadIdx.x % 32;
    group = lane / 4;
    pair = lane % 4;
    const int warp = threadIdx.x / 32;
    warp_n = warp % G::kWarpsN;
    warp_k = warp / G::kWarpsN;
    const int m_tiles = (params.m + Cfg::block_m - 1) / Cfg::block_m;
    int item = blockIdx.x;
    m_tile = item % m_tiles;   // fastest: the CTAs that read the same B rows run together
    item /= m_tiles;
    n_tile = item % G::kNTiles;
    split = item / G::kNTiles;
    n_first = n_tile * Cfg::block_n + warp_n * G::kRowsPerWarp;
    // The warp's 16 rows of B lie in one 128-row scale block (16 divides 128); a warp past N
    // reads the last one (its rows are never stored).
    b_scales = min(n_first, Cfg::n - 1) / kScaleBlock * G::kScaleBlocksK;
    // Masked groups (weight-only, include/autogemm/grouped.hpp): the stored rows are groups x
    // group_rows (block_m divides group_rows), so a tile lies in one group g, whose B, scales
    // and zeros are rows g N .. g N + N - 1 of [groups x N]-row matrices.
    int b_first_row = 0;
    m_end = params.m;
    if constexpr (Cfg::grouping == kDecodeGroupedMasked) {
      const int g = m_tile * Cfg::block_m / params.group_rows;
      b_first_row = g * Cfg::n;
      m_end = g * params.group_rows + min(max(params.masked_m[g], 0), params.group_rows);
    }
    // Bytes into each chunk: B's 16 a lane; A's over the same span of K.
    for (int r = 0; r < 2 * G::kRowTiles; ++r) {
      const int n = n_first + group + 8 * r;
      b_valid[r] = n < Cfg::n;
      b_row[r] = b_first_row + (b_valid[r] ? n : 0);
      b_rows[r] = static_cast<const unsigned char*>(params.b) +
                  static_cast<long long>(b_row[r]) * params.ldb * G::kBBits / 8 + pair * 16;
    }
    for (int j = 0; j < G::kGroupsM; ++j) {
      const int m = m_tile * Cfg::block_m + 8 * j + group;
      a_valid[j] = m < m_end;
      a_rows[j] = static_cast<const unsigned char*>(params.a) +
                  (static_cast<long long>(a_valid[j] ? m : 0) * params.lda) * Cfg::in_bytes +
                  pair * G::kSpan * Cfg::in_bytes;
    }
  }
};

// One step's operands: for each 64-byte chunk of its block_k elements of K, 16 bytes of the
// lane's two B rows and of each of its A rows.
template <class Cfg>
struct DecodeStepVectors {
  uint4 b[DecodeGeometry<Cfg>::kChunks][2];                          // (chunk, row g / g + 8)
  uint4 a[DecodeGeometry<Cfg>::kChunks][DecodeGeometry<Cfg>::kGroupsM];   // (chunk, 8-row group)
};

// Issues the loads of the step at element k0 (none when !present: the vectors are zero).
template <class Cfg>
__device__ __forceinline__ DecodeStepVectors<Cfg> decode_load(const DecodeLane<Cfg>& at, int k0,
                                                              bool present) {
  using G = DecodeGeometry<Cfg>;
  DecodeStepVectors<Cfg> v;
#pragma unroll
  for (int c = 0; c < G::kChunks; ++c) {
    const int k = k0 + c * G::kChunkElems + at.pair * G::kVectorElems;
    const bool k_valid = present && k < Cfg::k;   // K is whole vectors: all in or all out
    const long long byte = static_cast<long long>(k0 + c * G::kChunkElems) * Cfg::in_bytes;
#pragma unroll
    for (int r = 0; r < 2; ++r)
      v.b[c][r] = ptx::ld_global_stream_v4(at.b_rows[r] + byte, k_valid && at.b_valid[r]);
#pragma unroll
    for (int j = 0; j < G::kGroupsM; ++j)
      v.a[c][j] = ptx::ld_global_shared_v4(at.a_rows[j] + byte, k_valid && at.a_valid[j]);
  }
  return v;
}

// Chunk c of a step loaded into registers, as fragments: the first mma takes words x, y of every
// vector, the second z, w (B rows g, g + 8 as the A operand's rows; the lane's A row as column g).
template <class Cfg>
__device__ __forceinline__ DecodeChunkFragments<Cfg> decode_register_fragments(
    const DecodeStepVectors<Cfg>& v, int c) {
  DecodeChunkFragments<Cfg> f;
  const uint4& b = v.b[c][0];
  const uint4& b8 = v.b[c][1];
  f.b[0][0] = b.x, f.b[0][1] = b8.x, f.b[0][2] = b.y, f.b[0][3] = b8.y;
  f.b[1][0] = b.z, f.b[1][1] = b8.z, f.b[1][2] = b.w, f.b[1][3] = b8.w;
#pragma unroll
  for (int j = 0; j < DecodeGeometry<Cfg>::kGroupsM; ++j) {
    f.a[j][0][0] = v.a[c][j].x, f.a[j][0][1] = v.a[c][j].y;
    f.a[j][1][0] = v.a[c][j].z, f.a[j][1][1] = v.a[c][j].w;
  }
  return f;
}

// The step's multiplies over its chunks, `fragments(c)` giving chunk c. Block-scaled FP8
// multiplies each 128-element scale block s of the step into `block_sums` and adds it to `acc`
// times its two scales: scale_b_of(s, k_block) for the warp's rows of B, scale_a_of(s, k_block,
// row) for row `row` of the CTA's tile of A.
template <class Cfg, class Fragments, class ScaleB, class ScaleA>
__device__ __forceinline__ void decode_multiply(float (&acc)[DecodeGeometry<Cfg>::kAccGroups][4],
                                                const Fragments& fragments, const ScaleB& scale_b_of,
                                                const ScaleA& scale_a_of,
                                                const DecodeLane<Cfg>& at, int k0) {
  using G = DecodeGeometry<Cfg>;
  if constexpr (!Cfg::block_scaled) {
#pragma unroll
    for (int c = 0; c < G::kChunks; ++c) {
      const DecodeChunkFragments<Cfg> f = fragments(c);
#pragma unroll
      for (int j = 0; j < G::kGroupsM; ++j)
#pragma unroll
        for (int h = 0; h < 2; ++h) decode_mma<Cfg>(acc[j], f.b[h], f.a[j][h]);
    }
  } else {
    // A's scales: rows 2 * pair, 2 * pair + 1 of each group, the columns of d0/d2 and d1/d3.
#pragma unroll
    for (int s = 0; s < G::kChunks / G::kChunksPerScaleBlock; ++s) {
      const int k_block = k0 / kScaleBlock + s;
      if (k_block >= G::kScaleBlocksK) break;
      const float scale_b = scale_b_of(s, k_block);
      float block_sums[G::kGroupsM][4] = {};
#pragma unroll
      for (int c = s * G::kChunksPerScaleBlock; c < (s + 1) * G::kChunksPerScaleBlock; ++c) {
        const DecodeChunkFragments<Cfg> f = fragments(c);
#pragma unroll
        for (int j = 0; j < G::kGroupsM; ++j)
#pragma unroll
          for (int h = 0; h < 2; ++h) decode_mma<Cfg>(block_sums[j], f.b[h], f.a[j][h]);
      }
#pragma unroll
      for (int j = 0; j < G::kGroupsM; ++j)
#pragma unroll
        for (int col = 0; col < 2; ++col) {
          const float scale_a = scale_a_of(s, k_block, 8 * j + 2 * at.pair + col);
          acc[j][col] += block_sums[j][col] * scale_a * scale_b;
          acc[j][col + 2] += block_sums[j][col + 2] * scale_a * scale_b;
        }
    }
  }
}

// Warp ring: copies the step at element k0 into `stage` (cp.async, not yet committed). B's 16
// rows from DRAM through L2 only (.cg); A's rows below M through L1 (.ca: the CTA's other warps
// along N copy the same ones). Pieces past K are zero-filled on both sides; rows past N or M
// are left as they are: they only reach D's rows and columns that are never stored.
template <class Cfg>
__device__ __forceinline__ void decode_ring_copy(unsigned char* stage, const DecodeLane<Cfg>& at,
                                                 const GemmParams& params, int k0) {
  using G = DecodeGeometry<Cfg>;
  using R = DecodeRing<Cfg>;
  const unsigned char* b = static_cast<const unsigned char*>(params.b);
  const unsigned char* a = static_cast<const unsigned char*>(params.a);
#pragma unroll
  for (int t = 0; t < R::kBCopies; ++t) {
    const int i = at.lane + 32 * t;
    const int row = i / R::kPieces, piece = i % R::kPieces;
    const int n = at.n_first + row;
    const int k = k0 + piece * G::kVectorElems;
    const bool k_valid = k < Cfg::k;
    if (n < Cfg::n)
      ptx::cp_async_16_cg(stage + R::offset(row, piece),
                          b + (static_cast<long long>(n) * params.ldb + (k_valid ? k : 0)) *
                                  Cfg::in_bytes,
                          k_valid);
  }
  if constexpr (Cfg::block_scaled) {
    // Slot 0..kScaleBlocks-1: B's; then A's rows. Slots past K or M are left as they are: the
    // multiply stops at K's last block and reads no scale of a row past M.
    float* scales = reinterpret_cast<float*>(stage + R::kRows * R::kRowBytes);
    for (int i = at.lane; i < R::kScaleFloats; i += 32) {
      const int row = i / R::kScaleBlocks - 1;   // -1: B
      const int k_block = k0 / kScaleBlock + i % R::kScaleBlocks;
      const int m = at.m_tile * Cfg::block_m + row;
      if (k_block >= G::kScaleBlocksK) continue;
      if (row < 0)
        ptx::cp_async_4(scales + i, params.scale_b + at.b_scales + k_block, true);
      else if (m < params.m)
        ptx::cp_async_4(scales + i,
                        params.scale_a + static_cast<long long>(m) * params.scale_a_row_stride +
                            k_block * params.scale_a_k_stride,
                        true);
    }
  }
#pragma unroll
  for (int t = 0; t < R::kACopies; ++t) {
    const int i = at.lane + 32 * t;
    const int row = i / R::kPieces, piece = i % R::kPieces;
    const int m = at.m_tile * Cfg::block_m + row;
    const int k = k0 + piece * G::kVectorElems;
    const bool k_valid = k < Cfg::k;
    if (m < params.m)
      ptx::cp_async_16_ca(stage + R::offset(16 + row, piece),
                          a + (static_cast<long long>(m) * params.lda + (k_valid ? k : 0)) *
                                  Cfg::in_bytes,
                          k_valid);
  }
}

// Warp ring: chunk c of a stage as fragments. B: one ldmatrix.x4 per mma, matrices (rows 0-7,
// rows 8-15) x (the half's first, second 16 bytes) = a0, a1, a2, a3. A's group j: one
// ldmatrix.x4 over its 8 rows and the chunk's four 16-byte pieces = b0, b1 of each mma.
template <class Cfg>
__device__ __forceinline__ DecodeChunkFragments<Cfg> decode_ring_fragments(
    const unsigned char* stage, int lane, int c) {
  using R = DecodeRing<Cfg>;
  DecodeChunkFragments<Cfg> f;
#pragma unroll
  for (int h = 0; h < 2; ++h)
    ptx::ldmatrix_x4(f.b[h], stage + R::offset(lane % 16, 4 * c + 2 * h + lane / 16));
#pragma unroll
  for (int j = 0; j < DecodeGeometry<Cfg>::kGroupsM; ++j) {
    unsigned r[4];
    ptx::ldmatrix_x4(r, stage + R::offset(16 + 8 * j + lane % 8, 4 * c + lane / 8));
    f.a[j][0][0] = r[0], f.a[j][0][1] = r[1], f.a[j][1][0] = r[2], f.a[j][1][1] = r[3];
  }
  return f;
}

// Weight-only B (Cfg::b_format). B's part of a step, loaded one step ahead: for each chunk of K
// and row tile t one 16-byte span of rows 16 t + g and 16 t + g + 8, and the int4 scales and
// zeros of the chunk (one 128-element group): rows 16 t + g (low half) and + 8 (high). A's part (its vectors over the same
// spans) is loaded in the step itself: a step of A a step ahead cost 4x B's registers at int4
// (A spans 4 vectors per B vector), and 230 registers held one 32-row CTA an SM, 0.2x our BF16
// at M = 128 (H200, bench --weights, 2026-11-29).
template <class Cfg>
struct WeightStepB {
  using G = DecodeGeometry<Cfg>;
  uint4 b[G::kChunks][2 * G::kRowTiles];   // (chunk, row 16 t + g / + 8)
  unsigned scales[G::kChunks][G::kRowTiles];   // int4: bf16 scales of rows g, g + 8; mxfp4: the
                                    // e8m0 bytes of the lane's span (group), rows g and g + 8
  unsigned zeros[G::kChunks][G::kRowTiles];    // int4-zp: zeros of rows g, g + 8 (bytes)
};
template <class Cfg>
struct WeightStepA {
  using G = DecodeGeometry<Cfg>;
  uint4 a[G::kChunks][G::kGroupsM][G::kAVectors];   // (chunk, 8-row group, vector of the span)
};

template <class Cfg>
__device__ __forceinline__ WeightStepB<Cfg> weight_load_b(const DecodeLane<Cfg>& at,
                                                         const GemmParams& params, int k0,
                                                         bool present) {
  using G = DecodeGeometry<Cfg>;
  WeightStepB<Cfg> v;
#pragma unroll
  for (int c = 0; c < G::kChunks; ++c) {
    const int chunk = k0 + c * G::kChunkElems;
    const bool k_valid = present && chunk + at.pair * G::kSpan < Cfg::k;   // whole spans
#pragma unroll
    for (int r = 0; r < 2 * G::kRowTiles; ++r)
      v.b[c][r] = ptx::ld_global_stream_v4(
          at.b_rows[r] + static_cast<long long>(chunk) * G::kBBits / 8, k_valid && at.b_valid[r]);
#pragma unroll
    for (int t = 0; t < G::kRowTiles; ++t) {   // row tile t: rows b_row[2t] and b_row[2t + 1]
      const long long row = at.b_row[2 * t], row8 = at.b_row[2 * t + 1];
      if constexpr (Cfg::b_format == kWeightMxfp4) {
        // The lane's span is one group: its byte in rows g and g + 8 of the [N, K / 32] scales.
        constexpr int kGroupsK = Cfg::k / kWeightMxGroup;
        const int group = chunk / kWeightMxGroup + at.pair;
        const unsigned char* scales = static_cast<const unsigned char*>(params.b_scales);
        v.scales[c][t] = ptx::ld_global_nc_u8(scales + row * kGroupsK + group, k_valid) |
                         ptx::ld_global_nc_u8(scales + row8 * kGroupsK + group, k_valid) << 8;
      } else if constexpr (Cfg::b_format != kWeightInt8) {
        constexpr int kGroupsK = Cfg::k / kWeightInt4Group;
        const int group = chunk / kWeightInt4Group;
        const unsigned short* scales = static_cast<const unsigned short*>(params.b_scales);
        const long long g_row = row * kGroupsK + group, g8_row = row8 * kGroupsK + group;
        const bool valid = present && chunk < Cfg::k;
        v.scales[c][t] = ptx::ld_global_nc_u16(scales + g_row, valid) |
                         ptx::ld_global_nc_u16(scales + g8_row, valid) << 16;
        if constexpr (Cfg::b_format == kWeightInt4Zp) {
          const unsigned char* zeros = static_cast<const unsigned char*>(params.b_zeros);
          v.zeros[c][t] = ptx::ld_global_nc_u8(zeros + g_row, valid) |
                          ptx::ld_global_nc_u8(zeros + g8_row, valid) << 8;
        }
      }
    }
  }
  return v;
}

template <class Cfg>
__device__ __forceinline__ WeightStepA<Cfg> weight_load_a(const DecodeLane<Cfg>& at, int k0) {
  using G = DecodeGeometry<Cfg>;
  WeightStepA<Cfg> v;
#pragma unroll
  for (int c = 0; c < G::kChunks; ++c) {
    const int chunk = k0 + c * G::kChunkElems;
    const bool k_valid = chunk + at.pair * G::kSpan < Cfg::k;
#pragma unroll
    for (int j = 0; j < G::kGroupsM; ++j)
#pragma unroll
      for (int e = 0; e < G::kAVectors; ++e)
        v.a[c][j][e] = ptx::ld_global_shared_v4(
            at.a_rows[j] + static_cast<long long>(chunk) * Cfg::in_bytes + 16 * e,
            k_valid && at.a_valid[j]);
  }
  return v;
}

// The step's multiplies. int4: each chunk (one scale group) into block sums of A times the
// exact bf16 (128 + q), less (128 + zero) times the group's sum of A, added to acc times the
// rows' scales in fp32 (the bias off the sum: a subtraction a pair fewer, 2 mma a 16 of K).
// int8: straight into acc; the rows' scales multiply the sums at the end (weight_main_loop).
// mxfp4: straight into acc, each lane's span (a group of its own: the mma sums the 4 lanes'
// spans) scaled in bf16 by its power of two before the mma, exactly. Each row tile takes the
// same A vectors, and int4's sums of A are taken once for all of them.
template <class Cfg>
__device__ __forceinline__ void weight_multiply(float (&acc)[DecodeGeometry<Cfg>::kAccGroups][4],
                                                const WeightStepB<Cfg>& v,
                                                const WeightStepA<Cfg>& x) {
  using G = DecodeGeometry<Cfg>;
  constexpr bool kIntoAcc = Cfg::b_format == kWeightInt8 || Cfg::b_format == kWeightMxfp4;
  constexpr unsigned kOnes = 0x3f803f80u;   // bf16x2 (1, 1)
#pragma unroll
  for (int c = 0; c < G::kChunks; ++c) {
    // int4: the group's sums of A (an mma by ones: every row of it is A's column sum), once for
    // every row tile.
    float a_sums[G::kGroupsM][4];
    if constexpr (!kIntoAcc) {
#pragma unroll
      for (int j = 0; j < G::kGroupsM; ++j) {
#pragma unroll
        for (int e = 0; e < 4; ++e) a_sums[j][e] = 0.f;
#pragma unroll
        for (int t = 0; t < G::kSpan / 4; ++t) {
          const uint4& a = x.a[c][j][t / 2];
          const unsigned a0 = t % 2 == 0 ? a.x : a.z, a1 = t % 2 == 0 ? a.y : a.w;
          ptx::mma_m16n8k16_bf16(a_sums[j], kOnes, kOnes, kOnes, kOnes, a0, a1);
        }
      }
    }
#pragma unroll
    for (int tile = 0; tile < G::kRowTiles; ++tile) {
      // B's span as bf16 pairs, rows g and g + 8 of the tile: pairs[r][p] holds elements 2p,
      // 2p + 1 of the span (kSpan / 2 pairs).
      unsigned pairs[2][G::kSpan / 2];
#pragma unroll
      for (int r = 0; r < 2; ++r) {
        const uint4& bv = v.b[c][2 * tile + r];
        const unsigned words[4] = {bv.x, bv.y, bv.z, bv.w};
        if constexpr (Cfg::b_format == kWeightInt8) {
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            const unsigned offset_word = words[w] ^ 0x80808080u;
            pairs[r][2 * w] = int8_pair<0>(offset_word);
            pairs[r][2 * w + 1] = int8_pair<1>(offset_word);
          }
        } else if constexpr (Cfg::b_format == kWeightMxfp4) {
          const unsigned scale = e8m0_bf16x2((v.scales[c][tile] >> (8 * r)) & 0xffu);
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            pairs[r][4 * w] = mxfp4_pair<0>(words[w], scale);
            pairs[r][4 * w + 1] = mxfp4_pair<1>(words[w], scale);
            pairs[r][4 * w + 2] = mxfp4_pair<2>(words[w], scale);
            pairs[r][4 * w + 3] = mxfp4_pair<3>(words[w], scale);
          }
        } else {
#pragma unroll
          for (int w = 0; w < 4; ++w) {
            pairs[r][4 * w] = int4_biased_pair<0>(words[w]);
            pairs[r][4 * w + 1] = int4_biased_pair<1>(words[w]);
            pairs[r][4 * w + 2] = int4_biased_pair<2>(words[w]);
            pairs[r][4 * w + 3] = int4_biased_pair<3>(words[w]);
          }
        }
      }
      float sums[G::kGroupsM][4];
#pragma unroll
      for (int j = 0; j < G::kGroupsM; ++j)
#pragma unroll
        for (int e = 0; e < 4; ++e) sums[j][e] = kIntoAcc ? acc[tile * G::kGroupsM + j][e] : 0.f;
#pragma unroll
      for (int t = 0; t < G::kSpan / 4; ++t)
#pragma unroll
        for (int j = 0; j < G::kGroupsM; ++j) {
          const uint4& a = x.a[c][j][t / 2];
          const unsigned a0 = t % 2 == 0 ? a.x : a.z, a1 = t % 2 == 0 ? a.y : a.w;
          ptx::mma_m16n8k16_bf16(sums[j], pairs[0][2 * t], pairs[1][2 * t], pairs[0][2 * t + 1],
                                 pairs[1][2 * t + 1], a0, a1);
        }
      if constexpr (kIntoAcc) {
#pragma unroll
        for (int j = 0; j < G::kGroupsM; ++j)
#pragma unroll
          for (int e = 0; e < 4; ++e) acc[tile * G::kGroupsM + j][e] = sums[j][e];
      } else {
        // sum (q - zero) a = sum (128 + q) a - (128 + zero) sum a, then times the group's scale.
        const unsigned sc = v.scales[c][tile];
        const float scale_g = __uint_as_float(sc << 16);
        const float scale_g8 = __uint_as_float(sc & 0xffff0000u);
        const float bias_g = int4_bias(Cfg::b_format == kWeightInt4Zp ? v.zeros[c][tile] & 0xffu : 8u);
        const float bias_g8 = int4_bias(Cfg::b_format == kWeightInt4Zp ? v.zeros[c][tile] >> 8 & 0xffu : 8u);
#pragma unroll
        for (int j = 0; j < G::kGroupsM; ++j) {
          float (&d)[4] = acc[tile * G::kGroupsM + j];
          d[0] = fmaf(fmaf(-bias_g, a_sums[j][0], sums[j][0]), scale_g, d[0]);
          d[1] = fmaf(fmaf(-bias_g, a_sums[j][1], sums[j][1]), scale_g, d[1]);
          d[2] = fmaf(fmaf(-bias_g8, a_sums[j][2], sums[j][2]), scale_g8, d[2]);
          d[3] = fmaf(fmaf(-bias_g8, a_sums[j][3], sums[j][3]), scale_g8, d[3]);
        }
      }
    }
  }
}

// Weight-only B: the split's steps, this warp's share of them. B (the DRAM stream) sits in
// num_stages + 1 register slots, so num_stages steps are on their way while one multiplies (a
// step's bytes are a quarter of BF16's at int4). Against one step ahead, 2..4 (the planner's
// pick) measured M >= 16 rows 6-25% faster and M <= 8 rows 3-11% slower (H200, bench
// --weights int4-g128, 2026-11-29: 30 MB at M = 1 in 19.6 -> 21.2 us, the copy 10.8), so B's
// round trip is not what limits small M. A (from L1 and L2) is loaded at the top of its step,
// its latency overlapping the step's dequantisation. int8's per-row scales then multiply the
// sums.
template <class Cfg>
__device__ __forceinline__ void weight_main_loop(float (&acc)[DecodeGeometry<Cfg>::kAccGroups][4],
                                                 const DecodeLane<Cfg>& at,
                                                 const GemmParams& params, int first_step,
                                                 int end_step) {
  using G = DecodeGeometry<Cfg>;
  constexpr int kSlots = Cfg::num_stages + 1;
  const int first = first_step + at.warp_k;
  WeightStepB<Cfg> b[kSlots];   // slot i: steps first + (i + kSlots j) kWarpsK
#pragma unroll
  for (int i = 0; i < kSlots; ++i) {
    const int step = first + i * G::kWarpsK;
    b[i] = weight_load_b<Cfg>(at, params, step * Cfg::block_k, step < end_step);
  }
  for (int base = first; base < end_step; base += kSlots * G::kWarpsK) {
#pragma unroll
    for (int i = 0; i < kSlots; ++i) {
      const int step = base + i * G::kWarpsK;   // the same for the whole warp
      if (step < end_step) {
        const WeightStepA<Cfg> a = weight_load_a<Cfg>(at, step * Cfg::block_k);
        weight_multiply<Cfg>(acc, b[i], a);
        const int ahead = step + kSlots * G::kWarpsK;
        b[i] = weight_load_b<Cfg>(at, params, ahead * Cfg::block_k, ahead < end_step);
      }
    }
  }
  if constexpr (Cfg::b_format == kWeightInt8) {
    const float* scales = static_cast<const float*>(params.b_scales);
#pragma unroll
    for (int tile = 0; tile < G::kRowTiles; ++tile) {
      const float scale_g = scales[at.b_row[2 * tile]], scale_g8 = scales[at.b_row[2 * tile + 1]];
#pragma unroll
      for (int j = 0; j < G::kGroupsM; ++j) {
        float (&d)[4] = acc[tile * G::kGroupsM + j];
        d[0] *= scale_g;
        d[1] *= scale_g;
        d[2] *= scale_g8;
        d[3] *= scale_g8;
      }
    }
  }
}

// The K-splitting warps' sums meet in shared memory: warp_k = 0 adds the others' in order.
template <class Cfg>
__device__ __forceinline__ void decode_sum_warps(float (&acc)[DecodeGeometry<Cfg>::kAccGroups][4],
                                                 const DecodeLane<Cfg>& at) {
  using G = DecodeGeometry<Cfg>;
  if constexpr (G::kWarpsK > 1) {
    __shared__ float4 others[G::kWarpsK - 1][G::kAccGroups][G::kWarpsN * 32];   // (warp_k - 1, group, lane of the N warps)
    const int t = at.warp_n * 32 + at.lane;
    if (at.warp_k > 0)
      for (int j = 0; j < G::kAccGroups; ++j)
        others[at.warp_k - 1][j][t] = make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
    __syncthreads();
    if (at.warp_k == 0)
      for (int w = 0; w < G::kWarpsK - 1; ++w)
        for (int j = 0; j < G::kAccGroups; ++j) {
          const float4 x = others[w][j][t];
          acc[j][0] += x.x;
          acc[j][1] += x.y;
          acc[j][2] += x.z;
          acc[j][3] += x.w;
        }
  }
}

// Split-K: every split counts its arrival on the tile's counter; the others store their sums
// in their slot and raise their flag; the last waits for the flags, adds the slots in split
// order (its own from registers) and clears counter and flags for the next call. The protocol,
// its memory-model reasoning and its cost are split_k_reduce.cuh's. Returns true in the CTA
// that stores D. Workspace per tile (m_tile * kNTiles + n_tile): one counter, split_k flags,
// split_k slots of block_m x block_n floats, float4 j of thread t at float (j * kSlotThreads + t) * 4:
// coalesced.
template <class Cfg>
__device__ __forceinline__ bool decode_sum_splits(float (&acc)[DecodeGeometry<Cfg>::kAccGroups][4],
                                                  const DecodeLane<Cfg>& at,
                                                  const GemmParams& params) {
  using G = DecodeGeometry<Cfg>;
  if constexpr (Cfg::split_k == 1) {
    return true;
  } else {
    constexpr int kSlotThreads = G::kWarpsN * 32;   // the warp_k = 0 lanes hold the sums
    constexpr int kSlotFloats = Cfg::block_m * Cfg::block_n;
    static_assert(kSlotFloats == G::kAccGroups * 4 * kSlotThreads, "a slot is one tile");
    const long long tile = static_cast<long long>(at.m_tile) * G::kNTiles + at.n_tile;
    unsigned* counter = params.split_k_counters + tile;
    unsigned* flags = params.split_k_flags + tile * Cfg::split_k;
    float* slots = params.split_k_partials + tile * Cfg::split_k * kSlotFloats;
    const int t = at.warp_n * 32 + at.lane;
    __shared__ int last;
    if (threadIdx.x == 0) last = ptx::atomic_add_relaxed_gpu(counter, 1) == Cfg::split_k - 1;
    __syncthreads();
    if (!last) {
      if (at.warp_k == 0)
        for (int j = 0; j < G::kAccGroups; ++j)
          ptx::st_global_v4(slots + at.split * kSlotFloats + (j * kSlotThreads + t) * 4,
                            acc[j][0], acc[j][1], acc[j][2], acc[j][3]);
      __syncthreads();   // every store before thread 0's release (cumulative fence)
      if (threadIdx.x == 0) ptx::store_release_gpu(flags + at.split, 1);
      return false;
    }
    if (threadIdx.x < Cfg::split_k && static_cast<int>(threadIdx.x) != at.split) {
      while (ptx::load_acquire_gpu(flags + threadIdx.x) == 0) {
      }
      flags[threadIdx.x] = 0;
    }
    if (threadIdx.x == 0) *counter = 0;
    __syncthreads();
    if (at.warp_k != 0) return false;
    for (int j = 0; j < G::kAccGroups; ++j) {
      float4 total = make_float4(0.f, 0.f, 0.f, 0.f);
      for (int s = 0; s < Cfg::split_k; ++s) {
        const float4 x = s == at.split
                             ? make_float4(acc[j][0], acc[j][1], acc[j][2], acc[j][3])
                             : ptx::ld_global_cg_v4(slots + s * kSlotFloats + (j * kSlotThreads + t) * 4);
        if (s == 0) {
          total = x;
        } else {
          total.x += x.x;
          total.y += x.y;
          total.z += x.z;
          total.w += x.w;
        }
      }
      acc[j][0] = total.x;
      acc[j][1] = total.y;
      acc[j][2] = total.z;
      acc[j][3] = total.w;
    }
    return true;
  }
}

// D[m][n] = alpha * sum + beta * C[m][n] (or the fused epilogue's act(...) + beta * C) for the
// lane's d0..d3: D^T fragment row = n, column = m.
template <class Cfg>
__device__ __forceinline__ void decode_store(const float (&acc)[DecodeGeometry<Cfg>::kAccGroups][4],
                                             const DecodeLane<Cfg>& at, const GemmParams& params) {
  using G = DecodeGeometry<Cfg>;
#pragma unroll
  for (int i = 0; i < G::kAccGroups; ++i)
#pragma unroll
    for (int e = 0; e < 4; ++e) {
      const int tile = i / G::kGroupsM, j = i % G::kGroupsM;
      const int n = at.n_first + 16 * tile + at.group + 8 * (e / 2);
      const int m = at.m_tile * Cfg::block_m + 8 * j + 2 * at.pair + e % 2;
      if (n >= Cfg::n || m >= at.m_end) continue;
      float v = params.alpha * acc[i][e];
      // A decode tile's few elements per lane: the vectors are read per element.
      if constexpr (FusedEpilogue<Cfg>::kFused) v = FusedEpilogue<Cfg>::apply(params, acc[i][e], m, n);
      const long long c_index = static_cast<long long>(m) * params.ldc + n;
      const long long d_index = static_cast<long long>(m) * params.ldd + n;
      if constexpr (Cfg::out_kind == 2) {
        if (params.beta != 0.f) v += params.beta * static_cast<const float*>(params.c)[c_index];
        static_cast<float*>(params.d)[d_index] = v;
      } else {
        using Half = unsigned short;
        if (params.beta != 0.f) {
          const Half c = static_cast<const Half*>(params.c)[c_index];
          v += params.beta * (Cfg::out_kind == 0 ? ptx::bf16_to_float(c) : ptx::f16_to_float(c));
        }
        static_cast<Half*>(params.d)[d_index] =
            Cfg::out_kind == 0 ? ptx::float_to_bf16(v) : ptx::float_to_f16(v);
      }
    }
}

// ctas_per_sm: the occupancy the cost model assumed (plan/decode_cost.cpp); ptxas keeps the
// registers within 65536 / (128 x ctas_per_sm) so that it holds.
template <class Cfg>
__global__ void __launch_bounds__(DecodeGeometry<Cfg>::kThreads, Cfg::ctas_per_sm)
    decode_kernel(const __grid_constant__ GemmParams params) {
  using G = DecodeGeometry<Cfg>;
  const DecodeLane<Cfg> at(params);
  // A masked group's tiles past its valid rows read nothing (every split of the tile alike, so
  // no split-K counter is touched): an expert without tokens costs no weight bytes.
  if constexpr (Cfg::grouping == kDecodeGroupedMasked)
    if (at.m_tile * Cfg::block_m >= at.m_end) return;
  float acc[G::kAccGroups][4];   // (row tile x 8-row group of A, d0..d3) fp32
#pragma unroll
  for (int j = 0; j < G::kAccGroups; ++j)
#pragma unroll
    for (int e = 0; e < 4; ++e) acc[j][e] = 0.f;
  // This split's steps, then this warp's share of them (interleaved across the K warps).
  const int first_step = at.split * G::kSteps / Cfg::split_k;
  const int end_step = (at.split + 1) * G::kSteps / Cfg::split_k;
  if constexpr (G::kWeightOnly) {
    weight_main_loop<Cfg>(acc, at, params, first_step, end_step);
  } else if constexpr (Cfg::num_stages == 1) {
    // Double-buffered: the next step's loads are in flight while this step multiplies, so
    // every warp always has a step of B on its way (measured without it on the H200: 0.95 of
    // cuBLASLt at best over the decode suite, each warp idle for a DRAM round trip per step).
    int step = first_step + at.warp_k;
    DecodeStepVectors<Cfg> current = decode_load<Cfg>(at, step * Cfg::block_k, step < end_step);
    for (; step < end_step; step += G::kWarpsK) {
      const int next = step + G::kWarpsK;
      const DecodeStepVectors<Cfg> following =
          decode_load<Cfg>(at, next * Cfg::block_k, next < end_step);
      decode_multiply<Cfg>(
          acc, [&](int c) { return decode_register_fragments<Cfg>(current, c); },
          [&](int, int k_block) { return params.scale_b[at.b_scales + k_block]; },
          [&](int, int k_block, int row) {
            const int m = at.m_tile * Cfg::block_m + row;
            return m < params.m ? params.scale_a[m * params.scale_a_row_stride +
                                                 k_block * params.scale_a_k_stride]
                                : 0.f;
          },
          at, step * Cfg::block_k);
      current = following;
    }
  } else {
    using R = DecodeRing<Cfg>;
    constexpr int kStages = Cfg::num_stages;
    extern __shared__ __align__(128) unsigned char decode_rings[];   // (warp, stage) rings
    unsigned char* ring = decode_rings + (threadIdx.x / 32) * R::kWarpBytes;
    const int span = end_step - first_step - at.warp_k;
    const int count = span > 0 ? (span + G::kWarpsK - 1) / G::kWarpsK : 0;   // this warp's steps
    const auto k0_of = [&](int i) { return (first_step + at.warp_k + i * G::kWarpsK) * Cfg::block_k; };
    // One commit group per step, empty past the warp's last, so that wait_group<kStages - 2>
    // always means "step i has landed".
#pragma unroll
    for (int i = 0; i < kStages - 1; ++i) {
      if (i < count) decode_ring_copy<Cfg>(ring + i * R::kStageBytes, at, params, k0_of(i));
      ptx::cp_async_commit_group();
    }
    for (int i = 0; i < count; ++i) {
      ptx::cp_async_wait_group<kStages - 2>();
      __syncwarp();   // every lane's copies of step i visible; every lane done with step i - 1
      const int ahead = i + kStages - 1;   // into the stage step i - 1 used
      if (ahead < count)
        decode_ring_copy<Cfg>(ring + (ahead % kStages) * R::kStageBytes, at, params, k0_of(ahead));
      ptx::cp_async_commit_group();
      const unsigned char* stage = ring + (i % kStages) * R::kStageBytes;
      const float* scales = reinterpret_cast<const float*>(stage + R::kRows * R::kRowBytes);
      decode_multiply<Cfg>(
          acc, [&](int c) { return decode_ring_fragments<Cfg>(stage, at.lane, c); },
          [&](int s, int) { return scales[s]; },
          [&](int s, int, int row) {
            return at.m_tile * Cfg::block_m + row < params.m
                       ? scales[(1 + row) * R::kScaleBlocks + s]
                       : 0.f;
          },
          at, k0_of(i));
    }
  }
  decode_sum_warps<Cfg>(acc, at);
  if (!decode_sum_splits<Cfg>(acc, at, params) || at.warp_k != 0) return;
  decode_store<Cfg>(acc, at, params);
}

}  // namespace autogemm::sm90
