#pragma once
// `autogemm bench --gpus N`, registered on the bench command by cmd_bench.cpp:
//  - with --suite FILE[,FILE] [--schedule load|rr|priority] [--repeat R | --count C]
//    [--inputs replicated|root|host] [--memory-limit SIZE[,SIZE]] [--plot FILE.svg]: many
//    independent GEMMs scheduled over N GPUs (run_gemm_schedule, multi_gpu.hpp);
//  - with --m --n --k [--split m|n|k|none] [--inputs ...] [--output ...]: one GEMM split over N
//    GPUs (split_gemm) against the same GEMM on one (bench_split.cpp).
// Without a GPU (or with a preset --device) it shows the predictions instead.
#include <CLI/CLI.hpp>
#include <memory>
#include <string>
#include <vector>

#include "autogemm/multi_gpu.hpp"
#include "bench/suite.hpp"

namespace autogemm::cli {

struct MultiBenchOptions {
  int gpus = 0;                      // 0: not given (the one-GPU bench)
  std::string schedule = "load";     // a strategy or a comma list of them (each run in turn)
  int repeat = 1;                    // the suite list this many times
  int count = 0;                     // or: exactly this many GEMMs, cycling through the list
  bool no_migrate = false;
  std::string memory_limit;          // --memory-limit SIZE[,SIZE...]
  // One GEMM split (--m/--n/--k): as `plan --gpus` takes them.
  std::string split;                 // force a kind: none, m, n, k
  std::string inputs = "replicated";
  std::string output = "root";
  // A tensor-parallel pattern on each GPU's shards (bench_tp.cpp), as `plan --tp` takes them.
  std::string tp;                    // all-gather, reduce-scatter, all-reduce; gather = the split
  std::string transport;             // copy-engine | nccl; empty: the planner's choice
  int bands = 0;                     // 0: the planner's choice
  int rounds = 0;                    // all-reduce's rounds; 0: the planner's choice
  int64_t tail_rows = -1;            // a thin last band's rows; 0: even bands; -1: planned
  int merge_c_steps = -1;            // the ring's C steps: 1 one launch, 0 a launch per band
  bool process_per_rank = false;     // plan as torchrun runs it (D staged), run in this process
};

// Adds --gpus, --schedule, --repeat, --count, --no-migrate, --split, --inputs and --output.
std::shared_ptr<MultiBenchOptions> add_multi_bench_options(CLI::App& bench);

// True when --gpus or one of the options that go with it was given.
bool wants_multi_bench(const CLI::App& bench);

// Runs (or plans) the schedule, or with --m/--n/--k the split. Reads --suite (or the sizes),
// --dtype, --device, --json, --seed (and --warmup, --iters for the split) from `bench`; refuses
// its other options. Throws CLI::RuntimeError(1) when a result differs from the single-GPU one.
void run_multi_bench(const CLI::App& bench, const MultiBenchOptions& options);

// bench_split.cpp: `bench --gpus N --m M --n N --k K`.
void run_split_bench(const CLI::App& bench, const MultiBenchOptions& options);

// bench_tp.cpp: `bench --gpus N --tp PATTERN --m M --n N --k K [--dtype fp8]`.
void run_tp_bench(const CLI::App& bench, const MultiBenchOptions& options);

// ---- pure helpers (tested) ----------------------------------------------------------------

// The GEMM list: the suites' rows in order, `repeat` times, or cycled to exactly `count` rows
// when count > 0. InvalidArgument for an empty list, repeat < 1, count < 0, or both given.
std::vector<bench::BenchCase> multi_bench_list(const std::vector<bench::BenchCase>& rows,
                                               int repeat, int count);

// The priority the bench gives a row: decode rows (tag starting "decode": a token waits for
// them) before the rest.
int multi_bench_priority(const bench::BenchCase& row);

// --memory-limit: one size for every GPU or one per GPU, in bytes ("40GiB,20GiB", "512MiB").
// InvalidArgument naming --memory-limit for a bad size or count.
std::vector<int64_t> parse_memory_limits(const std::string& text, int gpus);

// "load,rr" -> the strategies, in order. InvalidArgument naming a bad one.
std::vector<ScheduleStrategy> parse_strategies(const std::string& text);

}  // namespace autogemm::cli
