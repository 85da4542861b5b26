#pragma once
// `autogemm tune --sweep` (issue 49 part 2): a cost model that knows when it is wrong. Each row
// of a suite has every distinct legal configuration the planner ranks (or an even sample of
// them, the planner's pick always in it) timed as `tune` times its table, and the report says
// per row how far the planner's pick is behind the best timed one and how far each prediction
// was off. `--sweep-csv FILE` keeps every timing beside its prediction and the prediction's
// parts, the input of a fit of the cost model's constants. Nothing is written to the tuning
// record.
#include <cstddef>
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/plan.hpp"
#include "bench/bench_runner.hpp"

namespace autogemm::cli {

struct SweepOptions {
  int sample = 16;        // configurations timed per row (0: every distinct one)
  int warmup = 3, iters = 10;
  uint64_t seed = 2026;
  // Every timing, one line each (sweep_csv), rewritten atomically after each row: a sweep
  // stopped part way (a device call's time limit) keeps the rows it finished.
  std::string csv;
};

// Indices into a ranked list of `count` configurations: all of them when `sample` is 0 or at
// least `count`, else `sample` evenly spaced ones from the first (the planner's pick) to the last.
std::vector<std::size_t> sweep_sample(std::size_t count, int sample);

struct SweepTiming {
  GemmConfig config;
  std::size_t rank = 0;     // in the planner's distinct list, 0 = its pick
  Prediction prediction;
  double measured_us = 0;   // median; 0 when it failed
  std::string failure;
};

struct SweepRow {
  bench::BenchItem item;
  std::size_t distinct = 0;           // distinct legal configurations the planner ranked
  std::vector<SweepTiming> timings;   // the sample, best rank first
  std::string failure;                // why the row was not swept (vendor plan, lost context)
};

// How far the pick (rank 0) is behind the fastest timing: pick / best - 1 (0 when the pick is
// the best, or nothing was timed).
double pick_behind_best(const SweepRow& row);
// The per-row table and the run's summary lines: rows whose pick is within 5% of the best, and
// the median |predicted - measured| / measured over every timing.
std::string format_sweep(const std::vector<SweepRow>& rows);
// One CSV line per timing: m, n, k, tag, rank, config, measured_us, predicted_us and the
// prediction's parts (compute, dram, l2, store, fixed, waves, tiles, busy SMs).
std::string sweep_csv(const std::vector<SweepRow>& rows);

// Times the rows on `gpu` (made current), writing progress to stderr and, after each row, the
// CSV so far to `options.csv` when it is set.
std::vector<SweepRow> run_sweep(const std::vector<bench::BenchItem>& items, const GpuInfo& gpu,
                                const SweepOptions& options);

}  // namespace autogemm::cli
