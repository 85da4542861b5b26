#pragma once
// Shared-memory layout of the sm90 GEMM family. This one header is compiled by the host
// compiler (the rules' gemm_smem_bytes) and by NVRTC (the kernel), so the rules'
// legality check and the kernel's carve-up can never disagree.
//
// Layout, from the 1024-B-aligned base (the runtime base of dynamic smem is only 16-B aligned,
// so the kernel rounds it up; total_bytes includes that 1024 B of slack):
//   A stages  num_stages x a_stage_bytes   // each (BLOCK_M, BLOCK_K) tile, 128B swizzle
//   B stages  num_stages x b_stage_bytes   // each (BLOCK_N, BLOCK_K) tile, 128B swizzle
//   D staging d_bytes                      // (BLOCK_M, BLOCK_N) output tile for the TMA store
//   scales    num_stages x scale_stage_bytes  // block-scaled FP8: the k-block's BLOCK_M A
//             scales, then its B scales (fp8_scales.cuh staged_b_scales), copied in by the
//             producer
//   barriers  full[num_stages], empty[num_stages], c_loaded[kMaxConsumers], and with groups
//             along K one more, the token tail's (gemm_kernel.cuh)  (8 B each)
// Every tile region is a multiple of 1024 B: the 128B swizzle repeats every 1024 B and both
// TMA and the wgmma descriptor (base offset 0) assume tiles start on that boundary
// (hopper-facts.md 1.1, 3.4).
#if defined(__CUDACC__)
#define AUTOGEMM_HD __host__ __device__
#else
#define AUTOGEMM_HD
#endif

namespace autogemm::sm90 {

constexpr int kSwizzleRepeatBytes = 1024;   // 128B swizzle: 8 rows x 128 B
constexpr int kSwizzleSpanBytes = 128;      // one swizzled row; TMA inner box limit for 128B
constexpr int kMaxConsumers = 2;            // consumer warpgroups per CTA

AUTOGEMM_HD constexpr int round_up(int x, int a) { return (x + a - 1) / a * a; }

// Whether a tile's C (beta != 0) is loaded into its D staging during its k-loop, kCLeadKBlocks
// before the loop's end (gemm_kernel.cuh Consumer::issue_c_ahead), rather than after it. Where
// every work item of a consumer goes out through its own rows of the staging by TMA: TMA stores
// from warp-specialised cooperative consumers (ping-pong's take the one buffer in turns), one
// split (split-K's or stream-K's last piece alone stores), ungrouped (the masked layout's tail
// tiles go out by the threads), D not FP8 (out_kind 3 reads no C). Issued at the tile's start instead,
// measured on an H200 with C read (--accumulate, same-run ratio to cuBLASLt): one-consumer
// tiles (M = 64, 128) gained +0.3..+19%, two-consumer tiles lost up to 8.6% (4096 x 32768 x 512)
// and 8.4% (fp32 D, 4096 x 4096 x 16384). The cost model charges C after the k-loop: taking it
// off moved 4096 x 32768 x 512 (C read) to 64x256x64 c1, predicted 261 us, measured 410 us
// against 128x256x64 c2's 298. Issued kCLeadKBlocks before the loop's end instead (two consumers
// only in loops longer than that: Consumer::c_ahead_issue_block), five of the public suite's
// two-consumer rows with C gained 0.4-1.3% in both runs (4096^3 0.951 -> 0.964 of cuBLASLt) and
// the 2-GPU all-reduce of 8192 x 28672 x 8192 went 2814 -> 2792 us; dense weight gradients (mostly
// ping-pong) 0.956 -> 0.955.
// 16-bit inputs only: FP8 k-loops with the issue in them spilled 368-384 bytes (64x128x128 pb2
// c1; 128x128x128 pb2 c2 with a fused epilogue).
AUTOGEMM_HD constexpr bool c_loaded_ahead(bool tma_store, bool warp_specialized, bool pingpong,
                                          int in_bytes, bool whole_k_items, int grouping,
                                          int out_kind, int d_chunk_boxes) {
  return tma_store && warp_specialized && !pingpong && in_bytes == 2 && whole_k_items &&
         grouping == 0 && out_kind != 3 && d_chunk_boxes == 0;
}
// C's load is issued this many k-blocks before the k-loop's end: 8 k-blocks of a 128x256x64
// tile are ~4 us of wgmma at the SM's peak, its two consumers' 64 KB of C ~1.8 us at the SM's
// share of DRAM (4.8 TB/s / 132).
constexpr int kCLeadKBlocks = 8;

struct SmemLayout {
  int a_stage_bytes = 0;
  int b_stage_bytes = 0;
  int a_offset = 0;        // first A stage
  int b_offset = 0;        // first B stage
  int d_offset = 0;
  int d_bytes = 0;
  int scale_offset = 0;    // first stage's scale slot (block-scaled FP8 only)
  int scale_stage_bytes = 0;
  int barrier_offset = 0;
  int num_barriers = 0;
  int total_bytes = 0;     // dynamic smem to request, alignment slack included
};

// Bytes of one stage's scale slot: BLOCK_M A scales and `b_floats` B scales (block scaling:
// the two 128-column blocks a tile can straddle; 1x128 B scales: one per column, block_n), fp32,
// rounded to 16 B so every slot starts 16-byte aligned.
AUTOGEMM_HD constexpr int scale_slot_bytes(int block_m, int b_floats) {
  return round_up(block_m * 4 + b_floats * 4, 16);
}

// d_staged_cols: the columns of D the epilogue stages at a time in shared memory (TMA store,
// or TMA load of C): block_n, the boxes of one chunk (d_chunk_boxes x 128 bytes of D), or 0.
// scale_b_floats: block-scaled FP8 (fp8_scales.cuh staged_b_scales), whose per-k-block scales travel through
// the pipeline too: BLOCK_M A scales and this many B scales per stage; 0 for none.
// tail_barrier: groups along K, whose producer waits for a run's last k-block itself.
AUTOGEMM_HD constexpr SmemLayout make_smem_layout(int block_m, int block_n, int block_k,
                                                  int num_stages, int in_bytes, int out_bytes,
                                                  int d_staged_cols, int scale_b_floats,
                                                  bool tail_barrier = false) {
  SmemLayout l{};
  l.a_stage_bytes = round_up(block_m * block_k * in_bytes, kSwizzleRepeatBytes);
  l.b_stage_bytes = round_up(block_n * block_k * in_bytes, kSwizzleRepeatBytes);
  l.a_offset = 0;
  l.b_offset = l.a_offset + num_stages * l.a_stage_bytes;
  l.d_offset = l.b_offset + num_stages * l.b_stage_bytes;
  l.d_bytes = round_up(block_m * d_staged_cols * out_bytes, kSwizzleRepeatBytes);
  l.scale_offset = l.d_offset + l.d_bytes;
  l.scale_stage_bytes = scale_b_floats > 0 ? scale_slot_bytes(block_m, scale_b_floats) : 0;
  l.barrier_offset = l.scale_offset + num_stages * l.scale_stage_bytes;
  l.num_barriers = 2 * num_stages + kMaxConsumers + (tail_barrier ? 1 : 0);
  l.total_bytes = kSwizzleRepeatBytes + l.barrier_offset + 8 * l.num_barriers;
  return l;
}

// The epilogue stages D (and C) as column slabs stored one TMA box each: as many full slabs of
// 128 bytes a row (64 bf16 or 32 fp32 columns, 128-byte swizzle, the widest TMA allows with a
// swizzle) as fit in block_n, then one tail slab of the remaining columns (block_n is a multiple
// of 8, so the tail is whole 16-byte chunks). Each slab is (BLOCK_M, its columns), a tail of 32
// or 64 bytes a row swizzled with that span, any other tail (16, 48, 80, 96, 112 bytes) dense and
// unswizzled: TMA's inner box may not exceed its swizzle span (cuTensorMapEncodeTiled), and the
// dense rows of those widths put a warp's staging writes on distinct banks or two to a bank.
// Why one tail slab and not slabs of the widest span dividing block_n: a consumer's TMA store
// costs about 3 SM cycles per box row (tile traces of 128-row tiles, H200), so 240 columns as 15
// boxes of 16 kept its consumers 2.37 us a tile where 256 columns as 4 boxes of 64 took 1.02.
// D staged in chunks (GemmConfig::d_chunk_boxes > 0): the staging holds one chunk of main boxes
// and the epilogue loads (C), stages and stores the tile's chunks one after another through it;
// no tail box (the rules: block_n a whole number of chunks).
AUTOGEMM_HD constexpr int d_staged_cols(int block_n, int out_bytes, int d_chunk_boxes) {
  return d_chunk_boxes > 0 ? d_chunk_boxes * (kSwizzleSpanBytes / out_bytes) : block_n;
}
// Columns of D a tile stores: block_n, or block_n / 2 with a gated epilogue (one output per gate
// and up pair, autogemm/epilogue.hpp). The D boxes below take this width.
AUTOGEMM_HD constexpr int d_tile_cols(int block_n, bool gated) { return gated ? block_n / 2 : block_n; }
AUTOGEMM_HD constexpr int d_main_box_cols(int out_bytes) { return kSwizzleSpanBytes / out_bytes; }
AUTOGEMM_HD constexpr int d_main_boxes(int block_n, int out_bytes) {
  return block_n / d_main_box_cols(out_bytes);
}
AUTOGEMM_HD constexpr int d_tail_box_cols(int block_n, int out_bytes) {
  return block_n % d_main_box_cols(out_bytes);
}
// The tail slab's swizzle span in bytes: 32 or 64 where its row is exactly that long, else 0
// (unswizzled, rows of d_tail_box_cols x out_bytes bytes back to back).
AUTOGEMM_HD constexpr int d_tail_swizzle_bytes(int block_n, int out_bytes) {
  const int bytes = d_tail_box_cols(block_n, out_bytes) * out_bytes;
  return bytes == 32 || bytes == 64 ? bytes : 0;
}
// TMA boxes one consumer stores per tile.
AUTOGEMM_HD constexpr int d_boxes(int block_n, int out_bytes) {
  return d_main_boxes(block_n, out_bytes) + (d_tail_box_cols(block_n, out_bytes) > 0 ? 1 : 0);
}

// Byte offset of `linear` (row * span + byte) inside a tile stored with a `span`-byte swizzle:
// the 16-byte chunk index is XORed with the row group bits 7.. of the address (CuTe
// Swizzle<log2(span/16), 4, 3>; hopper-facts.md 1.2). span 16 (or 0) = no swizzle.
AUTOGEMM_HD constexpr int swizzle_offset(int linear, int span) {
  return span <= 16 ? linear : linear ^ (((linear >> 7) & (span / 16 - 1)) << 4);
}

}  // namespace autogemm::sm90
