#pragma once
// How a GEMM is computed: the configuration fields of our one kernel family. The planner
// enumerates exactly these fields and the sm_90a kernel template accepts exactly these, so a
// configuration the planner calls legal compiles, fits and runs.
#include <cstdint>
#include <string>
#include <string_view>

namespace autogemm {

// wgmma: autogemm's sm_90a tile family (TMA + wgmma, warp-specialised); mma: its decode family
// (sm90/decode_kernel.cuh: B streamed from global memory into mma.sync, for few rows of A; the
// configuration text starts with "mma"); vendor: cuBLASLt (the planner's answer where our
// kernels cannot serve a problem, or a caller's choice: the configuration text "cuBLASLt").
enum class Instruction { wgmma, mma, vendor };
enum class Multicast { none, a, b };     // which operand a 2-CTA cluster shares through TMA multicast
enum class RasterOrder { along_m, along_n };  // which tile index moves fastest inside a group

std::string_view to_string(Instruction i);
std::string_view to_string(Multicast m);
std::string_view to_string(RasterOrder r);

// The fields the planner searches, and the only ones a caller may force. The decode family
// (instruction = mma) uses block_m (rows of A per CTA: 8, 16 or 32), block_n (rows of B per
// CTA: 16, 32 or 64), block_k (K elements per warp step), num_stages (1: steps loaded into
// registers; 2-8: a cp.async ring of that many steps per warp) and split_k; its other fields
// keep the values parse() gives them (1 consumer, not persistent, raster group 1, no
// cluster). What follows from
// them (shared memory, grid, the store path, the n-tail kernel's own configuration) is in the
// KernelSpec (kernel_spec.hpp); the technique ladder's teaching switches are its own.
struct GemmConfig {
  int block_m = 128;               // CTA tile rows (64, 128 or 256)
  int block_n = 128;               // CTA tile columns (multiple of 16 up to 256; 8 for tiny N)
  int block_k = 64;                // K per pipeline stage: 128 bytes of input (64 bf16, 128 fp8),
                                   // or 256 bytes for 16-bit inputs
  int num_stages = 4;              // shared-memory ring depth; 1 = synchronous
  int num_consumers = 1;           // math warpgroups (1 or 2); each owns block_m/num_consumers rows
  int cluster_m = 1;               // CTAs per cluster along M
  int cluster_n = 1;               // CTAs per cluster along N
  Multicast multicast = Multicast::none;
  bool persistent = true;          // grid = resident CTAs, each loops over tiles
  int raster_group = 8;            // tiles per group in grouped (L2-friendly) order; 1 = plain
  RasterOrder raster_order = RasterOrder::along_m;
  int split_k = 1;                 // K ranges computed by separate CTAs (more CTAs for few
                                   // output tiles); the last of a tile's ranges to finish sums
                                   // them from an fp32 workspace, in the same kernel
  bool stream_k = false;           // the tiles past whole waves are shared out as k-blocks:
                                   // every CTA computes an equal run of them, and tiles cut
                                   // between runs are summed like split-K's (token "stk",
                                   // kernels/sm90/stream_k.cuh)
  int promotion_buffers = 1;       // FP8: fp32 temporaries the wgmmas write before promotion;
                                   // 2 overlaps k-block i's promotion with k-block i+1's wgmmas
                                   // (a third register fragment). 16-bit inputs: always 1.
  bool ordered_issue = false;      // FP8, two consumers: they take turns issuing wgmma groups, so
                                   // the tensor pipe runs one consumer's group while the other
                                   // promotes; with one temporary each m64 slab is issued, waited
                                   // for and promoted on its own (one slab-sized temporary)
  bool pingpong = false;           // two consumers take whole tiles in turn: one's epilogue runs
                                   // beside the other's k-loop (16-bit inputs, TMA in and out,
                                   // D's staging taken in turn). Otherwise both split each
                                   // tile's rows
  bool n_tail_kernel = false;      // the last, narrow column of tiles (N mod block_n columns,
                                   // at most block_n / 2) runs as a second, narrower kernel
                                   // that starts on the SMs the main kernel frees (programmatic
                                   // dependent launch): no half-empty tiles in the last wave
                                   // (plan/n_tail.hpp)
  bool swap_ab = false;            // ungrouped: the kernel computes D^T = B^T A^T, so the
                                   // call's N runs along the tile's rows (block_m) and its M
                                   // along wgmma's N (block_n, steps of 8 instead of 64
                                   // rows): few rows of A stop padding a 64-row wgmma, or
                                   // many fit few tiles. D^T is staged as the call's rows for
                                   // TMA, else written by the threads (plan/swap_ab.hpp)
  int d_chunk_boxes = 0;           // D (and C) staged this many 128-byte column boxes at a
                                   // time instead of the whole tile (0): the epilogue loads,
                                   // stages and stores the tile chunk by chunk through one
                                   // small buffer, which leaves the pipeline more stages
                                   // (128x256 fp32 D: 4 instead of 2). Cooperative consumers
                                   // storing by TMA, D not FP8, not transposed (plan/rules.cpp)
  Instruction instruction = Instruction::wgmma;

  // Rows of a tile one consumer warpgroup computes and stores.
  int rows_per_consumer() const { return pingpong ? block_m : block_m / num_consumers; }

  // The configuration text: "128x256x64 s3 c2 p g8 cl2x1/b" (+ " sk2", " stk", " pb2", " oi",
  // " pp", " ntk", " swap", " dc2"),
  // "mma 16x64x256 s3 sk4" for the decode family, or "cuBLASLt".
  std::string describe() const;
  // The inverse of describe() (fields it omits keep their defaults, except: not persistent,
  // raster group 1, no cluster). Throws InvalidArgument naming the bad token.
  static GemmConfig parse(std::string_view text);
  friend bool operator==(const GemmConfig&, const GemmConfig&) = default;
};

// What the cost model predicts for a configuration on a device.
struct Prediction {
  int64_t num_tiles = 0;               // CTA work items: tiles covering M x N, times split_k
  int64_t waves = 0;                   // ceil(num_tiles / resident CTAs)
  double last_wave_utilization = 0;    // busy share of the SMs in the last wave (0..1]
  int busy_sms = 0;                    // SMs with work in the last wave
  double compute_us = 0;               // matrix-unit time
  double memory_us = 0;                // DRAM time of the bytes this tiling moves
  double l2_us = 0;                    // L2 -> SM time of the bytes this tiling moves
  double store_us = 0;                 // every wave's floor for writing D: its tiles' D at the
                                       // SM's share of the DRAM write rate (short K)
  double fixed_us = 0;                 // launch, prologue/epilogue and per-tile costs
  double operand_copy_us = 0;          // copying A or B into TMA-describable rows first
                                       // (KernelSpec::copy_a, copy_b); included in time_us
  double mma_efficiency = 0;           // share of the matrix-unit peak the tiles sustain (0..1]
  double dram_bytes = 0;               // bytes the model moves through DRAM
  double l2_bytes = 0;                 // bytes the model moves from L2 to the SMs (after multicast)
  double time_us = 0;                  // the prediction
  double tflops = 0;                   // problem flops / time_us
};

}  // namespace autogemm
