#pragma once
// How bench results are written: CSV (fixed header), JSON, and the terminal table.
#include <istream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/bench_runner.hpp"

namespace autogemm::bench {

// Exactly: m,n,k,dtype,layout,config,time_us,tflops,gbps,baseline_time_us,baseline_tflops,ratio,
// diff,diff_ref,failure
std::string csv_header();
// One line (no newline) in csv_header()'s order; config and failure are always quoted. The
// baseline fields are empty without a baseline; diff and diff_ref ("cublaslt" or "float64")
// are empty when nothing was compared; the timing fields are empty for a row whose call threw
// (failure says why) and for a row autogemm did not serve (ours_unavailable: failure is empty
// too; the table and JSON say why); failure is empty for a row that did not fail.
std::string csv_line(const BenchRow& row);
// The rows of a file csv_header()/csv_line() wrote (`autogemm bench --replot`): columns are
// found by their header names, so the order may differ; m, n, k, dtype (bf16, fp16, fp8) and
// time_us are required; config, tflops, gbps, the baseline fields (empty: no baseline), diff,
// diff_ref (absent in files written before it: the diff was against cuBLASLt), failure and a
// "tag" column are read when present. Rows without a time (failed before timing, or not served)
// are skipped (nothing to draw). Blank lines and lines starting with '#' are skipped. A timing becomes one-sample
// TimingStats. Throws InvalidArgument(argument, path, "line N: ...") for what it cannot read.
std::vector<BenchRow> rows_from_csv(std::istream& in, const std::string& argument,
                                    const std::string& path);

struct CopyBandwidth;  // copy_bandwidth.hpp

// {"rows": [...], "geomean_ratio": x, "rows_without_baseline": n, "rows_not_served": n,
// "failed_rows": n} with every measured field of each row (times as {median_us, min_us, max_us,
// mean_us, samples}; the check as diff, diff_ref, diff_limit, checked_rows; "failure" on a row
// that failed; "ours_unavailable" on a row autogemm did not serve), pretty-printed. With `copy` (measured on the
// same GPU) also "copy_gbps", "copy_bytes", "copy" (its times), "memory_bound" (rows, min_share,
// min_shape, geomean_share) and, on each row with M <= kMemoryBoundMaxM, "copy_share".
std::string rows_to_json(const std::vector<BenchRow>& rows, const CopyBandwidth* copy = nullptr);
// {"measured": false, "device": ..., "note": why nothing was measured, "rows": [...]}.
std::string plan_rows_to_json(const std::vector<PlanRow>& rows, const std::string& device,
                              const std::string& note);

// Aligned human-readable tables, one line per row, with a header line. A baseline that was asked
// for and could not run shows as "n/a" (the reason follows the row); "ref" says what the diff is
// against; a row that failed says FAILED and why; a row autogemm did not serve shows n/a for its
// configuration and the baseline, and why.
std::string format_table(const std::vector<BenchRow>& rows);
// The lines under the table: the geometric-mean ratio over the rows with a cuBLASLt baseline
// (`baseline`: one was asked for), how many rows had none ("3 of 12 rows had no cuBLASLt
// baseline (n/a)"), how many autogemm did not serve ("2 of 12 rows not served (n/a): ...") and
// how many FAILED. Each line ends with a newline.
std::string format_summary(const std::vector<BenchRow>& rows, bool baseline);
std::string format_plan_table(const std::vector<PlanRow>& rows);

// The text of one progress update: "[=====>      ] 3/20 4096x7168x16384" (rows done of total,
// the row being measured); progress.hpp writes it to the terminal.
std::string progress_text(std::size_t done, std::size_t total, const BenchItem* current,
                          int width = 30);

// Pieces the grouped bench's report (grouped_report.hpp) writes the same way: a CSV field always
// quoted (RFC 4180: a quote inside is doubled), and a TimingStats as JSON ({median_us, min_us,
// max_us, mean_us, samples}).
std::string csv_quoted(const std::string& field);
nlohmann::json timing_json(const TimingStats& stats);

}  // namespace autogemm::bench
