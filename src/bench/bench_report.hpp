#pragma once
// How bench results are written: CSV (fixed header), JSON, and the terminal table.
#include <istream>
#include <string>
#include <vector>

#include "bench/bench_runner.hpp"

namespace autogemm::bench {

// Exactly: m,n,k,dtype,layout,config,time_us,tflops,gbps,baseline_time_us,baseline_tflops,ratio,diff
std::string csv_header();
// One line (no newline) in csv_header()'s order; config is always quoted; the baseline fields
// are empty without a baseline.
std::string csv_line(const BenchRow& row);
// The rows of a file csv_header()/csv_line() wrote (`autogemm bench --replot`): columns are
// found by their header names, so the order may differ; m, n, k, dtype (bf16, fp16, fp8) and
// time_us are required; config, tflops, gbps, the baseline fields (empty: no baseline) and a
// "tag" column are read when present. Blank lines and lines starting with '#' are skipped.
// A timing becomes one-sample TimingStats. Throws InvalidArgument(argument, path, "line N: ...")
// for what it cannot read.
std::vector<BenchRow> rows_from_csv(std::istream& in, const std::string& argument,
                                    const std::string& path);

struct CopyBandwidth;  // copy_bandwidth.hpp

// {"rows": [...], "geomean_ratio": x} with every measured field of each row (times as
// {median_us, min_us, max_us, mean_us, samples}), pretty-printed. With `copy` (measured on the
// same GPU) also "copy_gbps", "copy_bytes", "copy" (its times), "memory_bound" (rows, min_share,
// min_shape, geomean_share) and, on each row with M <= kMemoryBoundMaxM, "copy_share".
std::string rows_to_json(const std::vector<BenchRow>& rows, const CopyBandwidth* copy = nullptr);
// {"measured": false, "device": ..., "note": why nothing was measured, "rows": [...]}.
std::string plan_rows_to_json(const std::vector<PlanRow>& rows, const std::string& device,
                              const std::string& note);

// Aligned human-readable tables, one line per row, with a header line.
std::string format_table(const std::vector<BenchRow>& rows);
std::string format_plan_table(const std::vector<PlanRow>& rows);

// The text of one progress update: "[=====>      ] 3/20 4096x7168x16384" (rows done of total,
// the row being measured); progress.hpp writes it to the terminal.
std::string progress_text(std::size_t done, std::size_t total, const BenchItem* current,
                          int width = 30);

}  // namespace autogemm::bench
