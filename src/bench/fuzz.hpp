#pragma once
// `autogemm fuzz`: random GEMM calls through the public entry point, each checked element by
// element against a float64-accumulated reference. Shapes are log-uniform in 1..16384 with a
// bias to tile edges and to decode sizes (1..32), over every layout, padded leading dimensions,
// alpha and beta with C, BF16/FP16/FP8 (per-tensor and block-scaled) inputs and BF16/FP32
// outputs, with the planner's choice or a forced configuration drawn from the legal set.
//
// N and K are compiled into each kernel, so cases are drawn from a pool of "families" (input
// and output types, layout, N, K, and a forced configuration or the planner): M, the leading
// dimensions, alpha, beta and the data vary per case, and the kernels of all cases are
// compiled once, in parallel, before the first case runs. Case i depends only on (seed, i), so
// `autogemm fuzz --seed S --only I` replays it.
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::bench {

enum class FuzzInput { bf16, fp16, fp8_block, fp8_tensor };

struct FuzzOptions {
  int64_t cases = 1000;
  uint64_t seed = 1;
  std::vector<FuzzInput> inputs = {FuzzInput::bf16, FuzzInput::fp16, FuzzInput::fp8_block,
                                   FuzzInput::fp8_tensor};
  int families = 160;                 // distinct (types, layout, N, K, configuration) draws
  double forced_share = 0.5;          // families with a forced configuration
  int64_t max_output_elements = int64_t(1) << 22;   // M x N: every element is compared on the host
  int64_t max_operand_elements = int64_t(1) << 25;  // each of A, B, C, D
  int64_t max_work = int64_t(1) << 33;              // M x N x K: the reference is plain FP64
};

struct FuzzCase {
  int64_t index = 0;
  int family = 0;
  FuzzInput input = FuzzInput::bf16;
  GemmProblem problem;                 // reads_c follows beta
  std::optional<GemmConfig> config;    // forced; empty: the planner's choice
  float alpha = 1, beta = 0;
  uint64_t data_seed = 0;              // picks the case's window into the random operands
};

// Cases [0, options.cases) (or the one with index `only`), drawn for `device`. Forced
// configurations are ones make_kernel_spec accepts for the case's problem.
std::vector<FuzzCase> draw_fuzz_cases(const FuzzOptions& options, const GpuInfo& device,
                                      std::optional<int64_t> only = std::nullopt);

// One line that reruns the case exactly, and the nearest `autogemm bench` command.
std::string fuzz_reproducer(const FuzzCase& c, const FuzzOptions& options);

std::string_view to_string(FuzzInput input);

struct FuzzOutcome {
  bool passed = false;
  std::string config;        // what ran ("cuBLASLt" for the vendor path)
  double diff = 0;           // DeepGEMM's measure over all of D
  int64_t bad = 0;           // elements outside the bound (NaN included: unwritten)
  int64_t guard = 0;         // elements outside D that changed
  std::string first_bad;     // "(row, col): got .., want .. (bound ..)"
  std::string error;         // an exception the call threw
};

// Runs cases on the current GPU, reusing one set of device buffers sized for all of them.
class FuzzRunner {
 public:
  explicit FuzzRunner(const std::vector<FuzzCase>& cases);
  ~FuzzRunner();
  FuzzRunner(const FuzzRunner&) = delete;
  FuzzRunner& operator=(const FuzzRunner&) = delete;
  FuzzOutcome run(const FuzzCase& c);
  // After a failed case: false when the failure left the CUDA context unusable (a sticky error
  // such as a misaligned address), so no later case can run in this process.
  static bool context_usable();

 private:
  struct Buffers;
  Buffers* buffers_;
};

// Compiles every kernel the cases launch (the planner's or the forced configuration's spec),
// on `threads` threads; returns how many distinct kernels there were. `limit` > 0 stops after
// that many (the CPU variant). Throws what a compile throws.
int64_t precompile_fuzz_kernels(const std::vector<FuzzCase>& cases, const GpuInfo& device,
                                int threads, int64_t limit = 0);

// The checks that need no GPU, for one case: its spec is made (planner's or forced), and
// describes a launchable call. Empty when sound, else what is wrong.
std::string check_fuzz_case_on_cpu(const FuzzCase& c, const GpuInfo& device);

}  // namespace autogemm::bench
