#pragma once
// How `autogemm bench --grouped` writes its results: the terminal table and summary, CSV, JSON,
// and, without a GPU, the drawn groups of each row.
#include <string>
#include <vector>

#include "bench/grouped_bench.hpp"

namespace autogemm::bench {

// "line 9: masked, 16 groups of ~64 rows, 4096 x 7168": a row as the messages name it.
std::string grouped_label(const GroupedItem& item);

// One line per row with a header line: kind, groups, valid M (the drawn rows, summed), N, K,
// tag, our median (us), TFLOP/s (useful flops: valid rows only), GB/s (bytes(): valid A rows,
// every B, valid D rows; FP8: and their scales), the loop's median and ratio,
// cublasGemmGroupedBatchedEx's median and ratio ("n/a" when it was asked for and did not run, "-"
// when not asked for), our dense twin's median and grouped/dense ratio (g/dense: our grouped
// TFLOP/s over the dense kernel's; "n/a" when it did not run), the worst group's diff against the
// float64 reference, for masked rows the share of a copy of their own bytes, and the
// configuration. Notes follow a row: FAILED and why, a baseline's or the dense twin's n/a reason,
// how the loop was timed when not as one CUDA graph.
std::string format_grouped_table(const std::vector<GroupedRow>& rows);

// The lines under the table, each ending in a newline: the geometric-mean ratio against each
// baseline with the rows it covers (`baseline`: the baselines were asked for) and what they were
// given that ours was not (and, with FP8 rows, how the baselines take FP8), the rows without each
// baseline, the contiguous rows' grouped/dense geomean and lowest ratio, the rows without a dense
// twin, the masked rows' copy shares, and the rows that FAILED with their lines.
std::string format_grouped_summary(const std::vector<GroupedRow>& rows, bool baseline);

// Exactly: line,kind,groups,m_per_group,valid_m,m,n,k,dtype,out_dtype,tag,config,time_us,tflops,
// gbps,loop_time_us,loop_ratio,batched_time_us,batched_ratio,dense_time_us,dense_tflops,
// dense_ratio,diff,worst_group,checked_rows,same_bytes_share,group_rows,loop_unavailable,
// batched_unavailable,dense_config,dense_unavailable,failure
// (dtype as --dtype spells it: bf16, fp16, fp8).
std::string grouped_csv_header();
// One line (no newline) in that order: config, group_rows (the drawn M per group, ';'-separated),
// dense_config, the reasons and failure always quoted; a time that does not exist (our call
// threw, a baseline or the dense twin n/a) and the fields computed from it are empty, as are diff
// and worst_group when nothing was compared and same_bytes_share on contiguous rows.
std::string grouped_csv_line(const GroupedRow& row);

// {"rows": [...], "geomean_loop_ratio", "geomean_batched_ratio",
// "geomean_dense_ratio_contiguous", "lowest_dense_ratio_contiguous": {ratio, line} (when a
// contiguous row has one), "rows_without_baseline", "failed_rows"}, every measured field of each
// row (the dense twin as "dense": {time_us, times, tflops, ratio, config, unavailable}), times as
// {median_us, ...}.
std::string grouped_rows_to_json(const std::vector<GroupedRow>& rows);

// Without a GPU: each row's drawn groups (kind, groups, m_per_group, valid M, the problem's m,
// N, K, tag, every group's M) as a table, or as JSON {"measured": false, "note", "rows"}.
std::string format_grouped_draws(const std::vector<GroupedItem>& items);
std::string grouped_draws_json(const std::vector<GroupedItem>& items, const std::string& note);

}  // namespace autogemm::bench
