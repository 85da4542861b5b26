#pragma once
// What the tensor-parallel planner (tp_plan.cpp) shares with the executor (tp_exec.cpp): the
// band rows of a chunk, the one-GPU problem each launch runs, and the workspace layout. Pure.
#include <cstdint>
#include <vector>

#include "autogemm/tensor_parallel.hpp"
#include "multi/partition.hpp"

namespace autogemm::multi {

// Bands are cut in whole 128-row granules (the tile height of every wgmma tile but the 64-row
// ones), so that a band's GEMM wastes no more rows than the chunk's would.
inline constexpr int64_t kTpBandGranule = 128;
inline constexpr int kTpMaxBands = 8;

// Rows [begin, end) of each band of a chunk of `chunk_rows` rows cut into `bands` even bands;
// with `tail_rows` > 0 (whole granules, fewer than the last band's rows) the last band's final
// `tail_rows` rows become a band of their own.
std::vector<Range> tp_bands(int64_t chunk_rows, int bands, int64_t tail_rows = 0);

// The bands a plan's launches run, from its band_rows (the executor never re-cuts).
std::vector<Range> tp_plan_bands(const TpPlan& plan);

// Rows of the whole D each rank's chunk covers: M / world.
int64_t tp_chunk_rows(const TpProblem& problem);

inline bool tp_block_scaled(const TpProblem& p) { return p.scaling == Scaling::block_1x128_128x128; }
// 1x128 (or 128x128) scale blocks along `elements`.
inline int64_t tp_scale_blocks(int64_t elements) { return (elements + 127) / 128; }

// The single-GPU problem one launch runs: the step's rows of A, the rank's B, and D (or a
// partial); C for the ring's later steps. The leading dimensions are those the executor passes:
// A from the caller's shard (lda) or the workspace (packed), D into the caller's D (ldd) or the
// workspace (packed), as the step says.
// A launch of several bands signals each (GemmProblem::signal_bands = step.bands).
GemmProblem tp_launch_problem(const TpProblem& problem, const TpStep& step);

// Bytes per rank of the workspace parts, and where each lies in the one allocation.
struct TpLayout {
  int64_t a_slot_bytes = 0;       // one rank's A shard (all_gather), packed
  int64_t a_scale_slot_bytes = 0; // its 1x128 scales (block-scaled FP8)
  int64_t part_bytes = 0;         // one M/G x N partial (reduce_scatter, all_reduce), packed
  // Offsets into the workspace; every part 256-byte aligned.
  int64_t a_slots = 0;            // world slots (own slot unused)
  int64_t a_scale_slots = 0;
  int64_t send = 0;               // world - 1 partial chunks this rank computes for others
  int64_t recv = 0;               // world - 1 partial chunks from the left neighbour
  int64_t d_slots = 0;            // all_reduce, gather: world finished chunks of D from the
                                  // others (none when they write D directly: TpPlan::d_direct)
  int64_t total = 0;
};
// The NCCL transport keeps a whole [M, N] partial instead of the ring's chunks.
TpLayout tp_layout(const TpProblem& problem, TpTransport transport, bool d_direct = false);

// The flag pad: 32-bit words after the buffers, one per (kind, slot, band) and one per peer.
// band_done and band_counter are a launch's row-band signals (TpStep::bands > 1): the kernel
// counts each band's stores into its counter, then raises its band_done flag; a launch's bands
// are consecutive words.
struct TpFlags {
  int world = 1, bands = 1;
  int64_t a_ready(int source, int band) const { return int64_t(source) * bands + band; }
  int64_t part_ready(int step, int band) const { return int64_t(world + step) * bands + band; }
  int64_t d_ready(int source, int band) const { return int64_t(2 * world + source) * bands + band; }
  int64_t band_done(int step, int band) const { return int64_t(3 * world + step) * bands + band; }
  int64_t band_counter(int step, int band) const { return int64_t(4 * world + step) * bands + band; }
  int64_t done(int peer) const { return int64_t(5 * world) * bands + peer; }
  int64_t d_free(int peer) const { return int64_t(5 * world) * bands + world + peer; }
  int64_t count() const { return int64_t(5 * world) * bands + 2 * world; }
  bool is_counter(int64_t word) const {
    return word >= int64_t(4 * world) * bands && word < int64_t(5 * world) * bands;
  }
};

}  // namespace autogemm::multi
