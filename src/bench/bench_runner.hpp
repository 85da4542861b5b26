#pragma once
// `autogemm bench`: for each shape, our gemm() and cuBLASLt on the same inputs in the same
// process, timed alike (bench/timing.hpp), their outputs compared (bench/compare.hpp). Without
// a GPU, the planner's choice and predicted time for a device preset instead.
#include <cstdint>
#include <exception>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "bench/timing.hpp"

namespace autogemm::bench {

// One measured shape: the problem (with its fused epilogue, if any: bench_row's plain and
// unfused times), (bf16/fp16 inputs, or e4m3 with block_1x128_128x128
// scales: then the inputs are BF16 data quantised by quantize.hpp, layout nt with packed
// operands, the baseline is block-scaled cuBLASLt and a per-tensor-scaled cuBLASLt call is timed
// too) and the suite's tag.
struct BenchItem {
  GemmProblem problem;
  std::string tag;
};

struct BenchOptions {
  int device = 0;               // CUDA ordinal
  int warmup = 5;
  int iters = 30;
  bool baseline = true;         // false: --no-baseline
  uint64_t seed = 2026;
  std::optional<GemmConfig> config;   // --config: force our configuration (experiments)
  int autotune = -1;                  // --autotune N (GemmOptions::autotune); -1: environment
  // --l2-warm: no L2 flush before the timed calls, so inputs that fit the L2 stay there. A
  // diagnostic (is a row limited by DRAM or by the kernel?), not how rows are reported.
  bool flush_l2 = true;
};

// "bf16", "fp16", "fp8": the --dtype spelling of a problem's inputs, used in reports.
std::string dtype_label(const GemmProblem& problem);

struct BenchRow {
  GemmProblem problem;
  std::string tag;
  std::string config;           // GemmConfig::describe() of what ran ("cuBLASLt" for vendor)
  bool used_vendor = false;
  std::string reason;           // GemmReport::reason
  TimingStats ours;
  double tflops = 0;            // at the median
  double gbps = 0;              // problem.min_bytes() / median
  std::optional<TimingStats> baseline;             // cuBLASLt (block-scaled for FP8)
  double baseline_tflops = 0;
  double ratio = 0;             // baseline median / our median (> 1: we are faster); 0 without
  // DeepGEMM's diff of our first call's D against diff_ref's: "cublaslt", the baseline's D on
  // the same inputs, or, for a row the baseline could not serve, "float64", the float64
  // reference (bench/reference.hpp; FP8: the GEMM of the unquantised BF16 inputs) of the first
  // checked_rows rows. NaN and diff_ref "" when nothing was compared (--no-baseline, or our
  // call failed).
  double diff = 0;
  std::string diff_ref;
  double diff_limit = 0;        // diff_limit(problem): what a correct D stays under
  int64_t checked_rows = 0;     // rows of D the diff covers
  int64_t unwritten = 0;        // non-finite entries of our D
  // Why the row FAILED; empty when it did not. Our call threw (then nothing was timed:
  // ours.samples == 0), or its D was wrong (diff not under diff_limit, or entries unwritten).
  std::string failure;
  // Why autogemm could not serve the row; empty when it could. gemm() sends a shape no kernel of
  // ours takes (rows TMA cannot describe, such as FP8 with K = 1000) to cuBLASLt, and cuBLASLt
  // declined it (runtime::CublasLtRefusal: block-scaled FP8 with M or N not a multiple of 4, no
  // algorithm). Nothing was run, compared or timed, the baseline (the same library on the same
  // problem) was not tried, and the row is not FAILED: it is shown as n/a with this reason.
  std::string ours_unavailable;
  std::optional<TimingStats> baseline_fp8_per_tensor;  // FP8 only
  double baseline_fp8_per_tensor_tflops = 0;
  // FP8 only: why a cuBLASLt baseline that was asked for did not run: cuBLASLt declined it
  // (cublaslt_refusal's reason, e.g. an old cuBLASLt without block scaling, or M not a multiple
  // of 4); empty when it ran. Such a row has no ratio.
  std::string baseline_unavailable;
  std::string baseline_fp8_per_tensor_unavailable;
  double quantize_us = 0;       // FP8 only: median time to quantise A (1x128) and B (128x128)
  double predicted_us = 0;      // cost model for the config that ran; 0 when not available
  // Memory-bound rows (copy_bandwidth.hpp is_memory_bound): a cudaMemcpy device-to-device that
  // reads and writes problem.min_bytes() in all, timed in the same loop as the GEMMs (L2 flushed,
  // one event pair per call), so it pays the same launch, first-byte latency and drain.
  std::optional<TimingStats> same_bytes_copy;
  // A fused epilogue (problem.epilogue; `ours` is the fused call, `baseline` cuBLASLt's own fused
  // epilogue where it has one): our plain GEMM alone, and it followed by the epilogue as a
  // kernel of its own (bench/epilogue_case.hpp), timed in the same loop. The unfused sequence's D
  // is checked against the same float64 reference as ours.
  std::optional<TimingStats> plain, unfused;
};

// What a correct D's diff stays under: DeepGEMM's thresholds, 1e-5 for 16-bit inputs and
// 1e-3 for FP8 (against the unquantised inputs; Hopper's FP8 accumulation and e4m3 rounding).
inline constexpr double kDiffLimit16Bit = 1e-5;
inline constexpr double kDiffLimitFp8 = 1e-3;
double diff_limit(const GemmProblem& problem);

// The float64 reference (one thread per output) checks a row without a baseline on its first
// rows only when the whole would take more than this many multiply-adds (2^36: about a second
// on an H100); at least 128 rows, a whole number of 128-row tiles.
inline constexpr double kReferenceCheckMaxFmas = 68719476736.0;
int64_t reference_check_rows(const GemmProblem& problem);

// The bench's input checks (the item's problem as it runs it: beta 0, FP8 only block-scaled and
// quantisable); throws InvalidArgument. run_bench checks every item before running any.
void check_item(const BenchItem& item);

// The reason when `error` is cuBLASLt declining a problem (runtime::CublasLtRefusal: a
// documented limit, no algorithm, a library without the feature), which leaves that call n/a;
// nullopt for every other error (a CUDA error, a failed launch, our kernel's), which fails the row.
std::optional<std::string> cublaslt_refusal(const std::exception& error);

// Measures one item on the current device (cudaSetDevice done by the caller). Leading
// dimensions of the problem are honoured; beta is 0. A row that fails is returned with
// `failure` set, not thrown: our call throwing (nothing timed), a baseline step failing other
// than by a refusal, or a wrong D (still timed). A baseline cuBLASLt declines at any step (the
// scale conversion, the heuristic query, the call: cublaslt_refusal) is n/a with the reason in
// baseline_unavailable, and the row is checked against the float64 reference instead. A row whose
// own call cuBLASLt declines is not served (ours_unavailable). Throws for bad input (check_item)
// and for an error after which the context cannot be used (cuda_context_lost): nothing later could
// run.
BenchRow run_case(const BenchItem& item, const BenchOptions& options, const GpuInfo& gpu,
                  L2Flusher& flusher);

// Measures every item; `progress(done, total, item)` is called before each item and once at
// the end (done == total, item null). Sets the device from options.device. Checks every item
// (check_item) before measuring any.
std::vector<BenchRow> run_bench(
    const std::vector<BenchItem>& items, const BenchOptions& options, const GpuInfo& gpu,
    const std::function<void(std::size_t, std::size_t, const BenchItem*)>& progress = {});

// Empty while the current device's CUDA context still works after an error; else the error
// every call now returns (an illegal address or a launch failure is sticky: the process cannot
// use the device again). Clears an error that is not sticky.
std::string cuda_context_lost();

// Geometric mean of the rows' ratios over the rows with a baseline that did not fail.
double geomean_ratio(const std::vector<BenchRow>& rows);
// Rows of ours that asked for a baseline and got none (baseline_unavailable set; they were
// checked against the float64 reference), rows autogemm did not serve (ours_unavailable set),
// and rows that FAILED.
std::size_t rows_without_baseline(const std::vector<BenchRow>& rows);
std::size_t rows_not_served(const std::vector<BenchRow>& rows);
std::size_t failed_rows(const std::vector<BenchRow>& rows);
// The rows whose call was timed (every row but those whose call threw), for the figures that
// need a time (copy-bandwidth shares, plots).
std::vector<BenchRow> timed_rows(const std::vector<BenchRow>& rows);

// ---- planning without a GPU ----------------------------------------------------------------

struct PlanRow {
  GemmProblem problem;
  std::string tag;
  std::string config;           // best candidate's describe(), or the forced configuration's
  std::string path_reason;
  double predicted_us = 0;
  double predicted_tflops = 0;
};

// plan_gemm for each item on a device description (a preset); no GPU involved. With `config`
// (a forced --config, legal for every item): that configuration and its predicted time instead.
std::vector<PlanRow> plan_items(const std::vector<BenchItem>& items, const GpuInfo& device,
                                const std::optional<GemmConfig>& config = std::nullopt);

}  // namespace autogemm::bench
