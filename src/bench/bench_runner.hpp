#pragma once
// `autogemm bench`: for each shape, our gemm() and cuBLASLt on the same inputs in the same
// process, timed alike (bench/timing.hpp), their outputs compared (bench/compare.hpp). Without
// a GPU, the planner's choice and predicted time for a device preset instead.
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "bench/suite.hpp"
#include "bench/timing.hpp"

namespace autogemm::bench {

struct BenchOptions {
  // Inputs: bf16, fp16 or e4m3 ("fp8": 1x128 / 128x128 block scales, cuBLASLt block-scaled
  // baseline plus a per-tensor-scaled cuBLASLt timing).
  DType input = DType::bf16;
  std::optional<DType> output;  // D (and C) type; default bf16, fp16 for fp16 inputs
  Layout layout = Layout::nt;
  int device = 0;               // CUDA ordinal (measuring)
  int warmup = 5;
  int iters = 30;
  bool baseline = true;         // false: --no-baseline
  uint64_t seed = 2026;
};

// The problem a case and the options describe (packed leading dimensions, beta = 0).
GemmProblem make_problem(const BenchCase& shape, const BenchOptions& options);
// "bf16", "fp16", "fp8": the --dtype spelling, used in reports.
std::string dtype_label(DType input);

struct BenchRow {
  BenchCase shape;
  std::string dtype;            // dtype_label
  Layout layout = Layout::nt;
  std::string config;           // GemmConfig::describe() of what ran ("cuBLASLt" for vendor)
  bool used_vendor = false;
  std::string reason;           // GemmReport::reason
  TimingStats ours;
  double tflops = 0;            // at the median
  double gbps = 0;              // problem.min_bytes() / median
  std::optional<TimingStats> baseline;             // cuBLASLt (block-scaled for FP8)
  double baseline_tflops = 0;
  double ratio = 0;             // baseline median / our median (> 1: we are faster); 0 without
  double diff = 0;              // gemm_diff(our D, baseline D); NaN without a baseline
  int64_t unwritten = 0;        // non-finite entries of our D
  std::optional<TimingStats> baseline_fp8_per_tensor;  // FP8 only
  double baseline_fp8_per_tensor_tflops = 0;
  double predicted_us = 0;      // cost model for the config that ran; 0 when not available
};

// Measures one case on the current device (cudaSetDevice done by the caller).
BenchRow run_case(const BenchCase& shape, const BenchOptions& options, const GpuInfo& gpu,
                  L2Flusher& flusher);

// Measures every case; `progress(done, total, case)` is called before each case and once at
// the end (done == total). Sets the device from options.device.
std::vector<BenchRow> run_bench(
    const std::vector<BenchCase>& cases, const BenchOptions& options, const GpuInfo& gpu,
    const std::function<void(std::size_t, std::size_t, const BenchCase*)>& progress = {});

// Geometric mean of the rows' ratios (rows without a baseline are skipped).
double geomean_ratio(const std::vector<BenchRow>& rows);

// ---- planning without a GPU ----------------------------------------------------------------

struct PlanRow {
  BenchCase shape;
  std::string dtype;
  Layout layout = Layout::nt;
  std::string config;           // best candidate's describe()
  std::string path_reason;
  double predicted_us = 0;
  double predicted_tflops = 0;
};

// plan_gemm for each case on a device description (a preset); no GPU involved.
std::vector<PlanRow> plan_cases(const std::vector<BenchCase>& cases, const BenchOptions& options,
                                const GpuInfo& device);

}  // namespace autogemm::bench
