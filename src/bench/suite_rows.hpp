#pragma once
// The loop over a suite's rows that the grouped benches share: every row measured in order on
// the options' GPU with one L2 flusher; a row that loses the CUDA context (a CudaError out of
// `measure`) fails with it, and every later row is reported "not run" instead of aborting the
// process, so the report still names which row broke the context.
#include <fmt/format.h>

#include <cstddef>
#include <functional>
#include <string>
#include <vector>

#include "autogemm/errors.hpp"
#include "bench/bench_runner.hpp"
#include "bench/timing.hpp"
#include "cuda/cuda_check.hpp"
#include "jit/log.hpp"

namespace autogemm::bench {

// A row's measurement failed with `e`: the row keeps the error, unless the CUDA context is lost,
// which is thrown on as CudaError for run_suite_rows (no later row can run).
template <class Row>
void fail_row(Row& row, const Error& e, const char* bench) {
  if (const std::string lost = cuda_context_lost(); !lost.empty())
    throw CudaError(fmt::format("{} line {}: {} (the CUDA context is lost: {})", bench,
                                row.item.source.line, e.what(), lost));
  row.failure += (row.failure.empty() ? "" : "; ") + std::string(e.what());
}

// The row as measured: logged as a warning when it failed.
template <class Row>
Row finished_row(Row row, const char* bench) {
  if (!row.failure.empty())
    log(2, "{} line {}: FAILED: {}", bench, row.item.source.line, row.failure);
  return row;
}

// measure(item, flusher) -> Row; unmeasured(item) -> a Row without figures, whose `failure`
// this loop sets. Items have `source.line`.
template <class Row, class Item, class Measure, class Unmeasured>
std::vector<Row> run_suite_rows(
    const std::vector<Item>& items, const BenchOptions& options,
    const std::function<void(std::size_t, std::size_t, const Item*)>& progress, Measure&& measure,
    Unmeasured&& unmeasured) {
  cuda_check(cudaSetDevice(options.device), "cudaSetDevice");
  L2Flusher flusher;
  std::vector<Row> rows;
  rows.reserve(items.size());
  std::string lost;   // set once the CUDA context is gone: the remaining rows cannot run
  for (std::size_t i = 0; i < items.size(); ++i) {
    if (progress) progress(i, items.size(), &items[i]);
    if (!lost.empty()) {
      rows.push_back(unmeasured(items[i]));
      rows.back().failure = "not run: " + lost;
      continue;
    }
    try {
      rows.push_back(measure(items[i], flusher));
    } catch (const CudaError& e) {
      rows.push_back(unmeasured(items[i]));
      rows.back().failure = e.what();
      lost = fmt::format("the CUDA context was lost at line {}", items[i].source.line);
    }
  }
  if (progress) progress(items.size(), items.size(), nullptr);
  return rows;
}

// "N of M rows FAILED: line a line b\n" for the rows (with `failure` and `item.source.line`)
// that failed, or "" when none did.
template <class Row>
std::string failed_rows_line(const std::vector<Row>& rows) {
  std::string lines;
  std::size_t failed = 0;
  for (const Row& r : rows)
    if (!r.failure.empty()) {
      ++failed;
      lines += fmt::format(" line {}", r.item.source.line);
    }
  if (failed == 0) return {};
  return fmt::format("{} of {} row{} FAILED:{}\n", failed, rows.size(),
                     rows.size() == 1 ? "" : "s", lines);
}

// "<what>: lowest X% (line L), geomean Y% of its speed\n" over the rows whose share(row) of a
// copy of their own bytes is positive and that did not fail, or "" when none has one.
template <class Row, class Share>
std::string copy_share_line(const std::vector<Row>& rows, Share&& share, const char* what) {
  std::vector<double> shares;
  const Row* lowest = nullptr;
  for (const Row& r : rows) {
    const double s = share(r);
    if (!(s > 0) || !r.failure.empty()) continue;
    shares.push_back(s);
    if (lowest == nullptr || s < share(*lowest)) lowest = &r;
  }
  if (lowest == nullptr) return {};
  return fmt::format("{}: lowest {:.0f}% (line {}), geomean {:.0f}% of its speed\n", what,
                     100 * share(*lowest), lowest->item.source.line,
                     100 * geometric_mean(shares));
}

}  // namespace autogemm::bench
