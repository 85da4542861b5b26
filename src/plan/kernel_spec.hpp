#pragma once
// Turns a configuration into the KernelSpec a call launches (include/autogemm/kernel_spec.hpp):
// the one function behind the planner's choice, forced configurations, the autotuner's
// candidates and the ladder's steps.
#include <cstdint>
#include <string>

#include "autogemm/kernel_spec.hpp"

namespace autogemm::plan {

// Throws InvalidArgument("config", text, first rule broken). `reason` becomes spec.reason.
KernelSpec make_spec(const GemmProblem& problem, const GemmConfig& config, const GpuInfo& device,
                     std::string reason, const LadderSwitches& switches = {});

// Work items of the persistent tile scheduler (kernels/sm90/tile_scheduler.cuh): ceil(M /
// block_m) x ceil(N / block_n) tiles grouped in clusters, times split_k.
int64_t cluster_work_items(const GemmProblem& problem, const GemmConfig& config);

// Split-K's workspace for `config` (empty unless split_k > 1 or stream_k): one ready flag per
// (work item, CTA of its cluster, consumer), one arrival counter per split_k flags, and an fp32
// slot per flag; stream-K's per (shared tile, consumer) a counter and stream_k_max_pieces flags
// and slots, for a grid of `slots` CTAs. kernels/sm90/split_k_reduce.cuh indexes them with the
// same numbers.
SplitKWorkspaceLayout split_k_layout(const GemmProblem& problem, const GemmConfig& config,
                                     int64_t slots = 0);

// Block-scaled FP8: the spec has the launcher copy A's scales to k-block-major first with M of
// at least kTransposedAScalesMinM (below it the GEMM is a few tile rows and the extra launch, ~3-4 us with its allocation, is a visible share of the
// call), and a tile's A-scale rows (block_m x ceil(K/128) x 4 B) at least kL1ScaleRowsBytes,
// the L1 left beside the stages (256 KB minus a ~220 KB shared-memory carve-out). Below that
// the gather's sectors stay in L1 after their first k-block and the transposition only cost:
// 4096x2112x7168 (128-row tiles, 28 KB of scale rows) went 0.958 -> 0.926 of cuBLASLt with it,
// 4096x7168x16384 (256 rows, 128 KB) 0.90 -> 1.01.
inline constexpr int64_t kTransposedAScalesMinM = 1024;
inline constexpr int64_t kL1ScaleRowsBytes = 32 * 1024;

bool a_scales_k_block_major(const GemmProblem& problem, const GemmConfig& config);

// The text of one kernel's fields: the configuration's, plus what the spec derived
// (" threads-store", " pdl-primary" ...) and the ladder's switches (" no-ws", " threads-load").
std::string describe(const KernelFields& fields);

}  // namespace autogemm::plan
