#pragma once
// What one call launches, worked out completely before anything runs. The planner's choice, a
// configuration the caller forces and each configuration the autotuner times all become a
// KernelSpec through one function, make_kernel_spec (src/plan/kernel_spec.cpp), which applies
// every rule of the kernel family first. Code generation reads a spec, the launcher launches
// it; neither decides anything the spec does not say.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm {

enum class LoadPath { threads, tma };    // how tiles reach shared memory
// How the epilogue writes D: `threads` from registers, element pairs (the ladder's plain
// stores, D^T of swap_ab); `tma` staged in shared memory and stored by TMA; `staged` staged the
// same way and written by the threads as 16-byte-aligned chunks of the caller's rows (rows TMA
// cannot store: ldd off 16 bytes, or rows ending inside a 16-byte chunk).
enum class StorePath { threads, tma, staged };
std::string_view to_string(LoadPath p);
std::string_view to_string(StorePath p);

// The technique ladder's switches (`autogemm ladder`, src/ladder/): its first steps run the
// kernel family without a producer warpgroup, with plain loads and stores, or on one CTA. The
// planner never changes them from these defaults, so they are no part of GemmConfig.
struct LadderSwitches {
  bool warp_specialized = true;          // a producer warpgroup feeds the consumers
  LoadPath load_path = LoadPath::tma;
  StorePath store_path = StorePath::tma; // `staged` where TMA cannot store D's rows
  int max_ctas = 0;                      // cap on the CTAs launched; 0 = none
  friend bool operator==(const LadderSwitches&, const LadderSwitches&) = default;
};

// Every compile-time field of one kernel of the sm90 family: the searched configuration and
// what the spec derives from it.
struct KernelFields {
  GemmConfig config;                     // n_tail_kernel is false here: each kernel is one
  bool warp_specialized = true;
  LoadPath load_path = LoadPath::tma;
  StorePath store_path = StorePath::tma;
  // setmaxnreg targets (multiples of 8 in 24..256): with warp specialisation the producer keeps
  // 40 and each consumer takes 232; 128 x 40 + 256 x 232 = 64512 <= 65536 registers per SM
  // (hopper-facts.md 5, CUTLASS's split).
  int producer_registers = 40;
  int consumer_registers = 232;
  // The decode family (instruction = mma): CTAs of 128 threads one SM must hold at once, so
  // the registers per thread are capped at 65536 / (128 x this) (__launch_bounds__); the cost
  // model's occupancy (plan/decode_cost.hpp). 0 for the tile family.
  int decode_ctas_per_sm = 0;
  // The decode family, weight-only B: 16-row tiles of B each warp multiplies against one A
  // fragment (plan/rules.hpp decode_row_tiles). 0 for the tile family.
  int decode_row_tiles = 0;
  bool launch_dependents = false;        // runs griddepcontrol.launch_dependents once resident
  bool waits_for_primary = false;        // launched as a programmatic dependent of the kernel
                                         // before it; waits for that kernel before it exits
  friend bool operator==(const KernelFields&, const KernelFields&) = default;
};

// One TMA descriptor a kernel encodes with cuTensorMapEncodeTiled: a row-major matrix of
// `rows` x `row_length` elements, rows `ld` elements apart, moved in boxes of `box_inner` x
// `box_outer` elements. The rules (plan/tma_rules.hpp) have accepted it, the call's pointer
// aside (checked at the entry point).
struct TensorMapSpec {
  char operand = 'A';           // 'A', 'B', 'C' or 'D': which operand's pointer and type
  int64_t row_length = 0, rows = 0, ld = 0;
  int box_inner = 0, box_outer = 0;
  int swizzle_bytes = 128;      // 0 (none), 32, 64 or 128
  bool tail = false;            // C and D: the box of the tile's last block_n % 64 columns
                                // (bf16; % 32 for fp32), next to the 128-byte main boxes
  friend bool operator==(const TensorMapSpec&, const TensorMapSpec&) = default;
};

// One kernel of a call.
struct KernelLaunch {
  GemmProblem problem;          // the columns it computes (n), with the call's leading dims
  int64_t first_column = 0;     // where those columns start in B, C, D and B's scales
  KernelFields fields;
  std::string text;             // the exact configuration text: "128x64x128 s5 c2 p g8 pdlw"
  std::string identity;         // everything that selects the compiled kernel (types, layout,
                                // N, K, fields); the launcher's cache key
  int threads_per_cta = 0;      // 128 per consumer warpgroup, +128 for the producer
  int smem_bytes = 0;           // dynamic shared memory per CTA
  int cluster_size = 1;         // cluster_m x cluster_n CTAs
  int64_t work_items = 0;       // the scheduler's items: cluster tiles x split_k
  std::vector<TensorMapSpec> tensor_maps;   // A and B (TMA loads), D and C (TMA stores)
  // CTAs launched: a persistent kernel takes every SM the device description offers (whole
  // clusters, at most max_ctas), capped by its work; a non-persistent one one CTA per item.
  // A persistent clustered kernel is capped once more when it is loaded, by the clusters the
  // driver reports co-resident (a GPC with an odd SM count leaves an SM out of 2-CTA clusters,
  // which no device description records).
  int64_t grid_ctas = 0;
};

// Split-K's workspace (kernels/sm90/split_k_reduce.cuh indexes it with the same numbers).
struct SplitKWorkspaceLayout {
  int64_t counters = 0;         // one per (CTA tile of the cluster-padded grid, consumer)
  int64_t flags = 0;            // split_k per counter
  int64_t partial_floats = 0;   // split_k slots of (block_m / num_consumers) x block_n per counter
  int64_t sync_bytes() const { return (counters + flags) * 4; }
  int64_t partial_bytes() const { return partial_floats * 4; }
};

// An operand whose rows TMA cannot describe (a row stride that is not a multiple of 16 bytes):
// the launcher first copies its `rows` rows of `row_elements` elements, `source_ld` apart, into
// stream-ordered memory with rows `padded_ld` apart, and the kernels read that copy.
struct OperandCopy {
  int64_t rows = 0, row_elements = 0, source_ld = 0, padded_ld = 0;
  int element_bytes = 0;
  bool active() const { return padded_ld > 0; }
  int64_t bytes() const { return rows * padded_ld * element_bytes; }
};

// One cuBLASLt algorithm, by the attributes that identify it (cublasLtMatmulAlgoConfigGetAttribute:
// ALGO_ID, TILE_ID, STAGES_ID, SPLITK_NUM, REDUCTION_SCHEME, CTA_SWIZZLING, CUSTOM_OPTION,
// INNER_SHAPE_ID, CLUSTER_SHAPE_ID). Autotuning times several of the heuristic's algorithms for a
// call and keeps the fastest; the tuning record holds these numbers, not the opaque
// cublasLtMatmulAlgo_t, because they are what cublasLtMatmulAlgoInit + ConfigSetAttribute
// rebuild it from in another process (runtime/cublaslt.hpp checks the rebuilt algorithm with
// cublasLtMatmulAlgoCheck before it runs).
struct VendorAlgo {
  int algo_id = 0;
  int tile_id = 0;
  int stages_id = 0;
  int splitk_num = 1;
  int reduction_scheme = 0;
  int cta_swizzling = 0;
  int custom_option = 0;
  int inner_shape_id = 0;
  int cluster_shape_id = 0;
  friend bool operator==(const VendorAlgo&, const VendorAlgo&) = default;
};
// "algo 66 tile 20 stages 8 splitk 1 reduction 0 swizzle 0 custom 0 inner 0 cluster 0"
std::string describe(const VendorAlgo& algo);

struct KernelSpec {
  GemmProblem problem;
  GemmConfig config;             // as the planner chose it or the caller gave it
  std::string text;              // config.describe()
  std::string reason;            // why this path ("sm_90a on h100-sxm: TMA loads + ...")
  bool vendor = false;           // cuBLASLt runs the call; `kernels` is empty
  // With `vendor`: the cuBLASLt algorithm autotuning chose (the tuning record's); none: the
  // heuristic's first for the call.
  std::optional<VendorAlgo> vendor_algo;
  std::vector<KernelLaunch> kernels;   // launched in this order: the main kernel, then the
                                       // n-tail kernel as its programmatic dependent
  SplitKWorkspaceLayout split_k;       // zero unless split_k > 1
  // Block-scaled FP8 with large M and long K: the launcher first copies A's scales to
  // k-block-major (`a_scale_copy_bytes` of stream-ordered memory), read by every kernel.
  bool a_scales_k_block_major = false;
  int64_t a_scale_copy_bytes = 0;
  // A's or B's rows copied first (OperandCopy); the kernels' problem (KernelLaunch::problem)
  // has the padded lda / ldb, `problem` the caller's.
  OperandCopy copy_a, copy_b;
};

// The spec of `config` for `problem` on `device`. Throws InvalidArgument naming the
// configuration and the first rule it breaks (config.instruction == vendor gives the vendor
// spec). Planner preferences (a cluster dividing the tile count) are not rules: a forced
// configuration runs without them.
KernelSpec make_kernel_spec(const GemmProblem& problem, const GemmConfig& config,
                            const GpuInfo& device);

}  // namespace autogemm
