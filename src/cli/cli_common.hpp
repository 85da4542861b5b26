#pragma once
// Helpers shared by the sub-commands that take a GEMM problem and a device (plan, bench):
// the --device default, the problem options, and the JSON forms of problems, configurations
// and predictions.
#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/kernel_spec.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::cli {

// The preset used when --device is not given and no GPU is present.
inline constexpr const char* kFallbackPreset = "h100-sxm";

// --device: "0", "1", ... a present GPU; a preset name; empty = GPU 0 when one is present,
// else kFallbackPreset with a one-line note on stderr saying why.
GpuInfo resolve_cli_device(const std::string& spec);

// Checks of options every command spells alike, as CLI11 validators: the parser refuses the
// value before the command runs (main.cpp words it as "--seed = -1: <rule>").
// --device: not empty (an empty name silently meant the default device).
CLI::Validator device_name_check();
// --seed: a non-negative integer (CLI11 reads "-1" into an unsigned seed as 2^64 - 1).
CLI::Validator seed_check();

// --m/--n/--k (size lists, see size_list.hpp), --dtype, --layout, --lda/--ldb/--ldd, and
// --scaling for FP8 (block, per_tensor or rowwise; default block).
struct ProblemOptions {
  std::string m, n, k;
  std::string dtype = "bf16";
  std::string layout = "nt";
  std::string scaling;
  std::string out_dtype;   // empty: bf16 (fp16 for fp16 inputs); e4m3 (fp8): FP8 with 1x128 scales
  int64_t lda = 0, ldb = 0, ldd = 0;
  std::string weights;     // empty: B as --dtype; else a weight-only format (autogemm/weights.hpp)

  void add_to(CLI::App& command);
  // --weights int4-g128|int4-g128-zp|int8|mxfp4, for the commands that plan or compile.
  void add_weights_to(CLI::App& command);
  // One problem per (m, n, k) of the cross product, each validated. Throws InvalidArgument
  // naming the option and value (unknown dtype, bad size token, m = 0, lda below the row).
  std::vector<GemmProblem> problems() const;
};

// The fused epilogue (autogemm/epilogue.hpp) as `plan` and `compile` take it: --bias bf16|fp32,
// --activation relu|gelu_tanh|gelu_erf|silu, --row-scale, --col-scale, --gated.
struct EpilogueOptions {
  std::string bias, activation;
  bool row_scale = false, col_scale = false, gated = false;

  void add_to(CLI::App& command);
  Epilogue epilogue() const;   // InvalidArgument names the option and value
  // Each problem with the epilogue, validated again.
  std::vector<GemmProblem> apply(std::vector<GemmProblem> problems) const;
};

// The problem a CLI user means by --dtype: bf16/fp16 in and out; fp8 = e4m3 inputs with
// DeepGEMM-style block scales (1x128 for A, 128x128 for B) and bf16 output.
GemmProblem make_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype,
                         const std::string& layout, int64_t lda, int64_t ldb, int64_t ldd);

// The spec of a --config text for `problem` on `device`: parsed, and made by the function the
// planner's own choices go through (make_kernel_spec), so refused by the same rules. Throws
// InvalidArgument naming --config, its text and the rule (compile and bench share it).
KernelSpec config_spec(const GemmProblem& problem, const std::string& config,
                       const GpuInfo& device);

// "bf16", "fp16" or "fp8": the --dtype spelling of a problem's inputs.
std::string dtype_name(const GemmProblem& problem);

nlohmann::json problem_json(const GemmProblem& problem);
nlohmann::json config_json(const GemmConfig& config);
nlohmann::json spec_json(const KernelSpec& spec);   // what a call launches
nlohmann::json prediction_json(const Prediction& prediction);

}  // namespace autogemm::cli
