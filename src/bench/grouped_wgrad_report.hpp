#pragma once
// How `autogemm bench --wgrad` writes a grouped suite's results (grouped_wgrad_bench.hpp): the
// terminal table and summary, CSV, JSON, and, without a GPU, each row's plan.
#include <string>
#include <vector>

#include "bench/bench_runner.hpp"
#include "bench/grouped_wgrad_bench.hpp"

namespace autogemm::bench {

// One line per row with a header line: line, tag, experts, tokens_per_group, T (the drawn
// tokens, summed), m, n, dW's GB, our median (us), TFLOP/s (2 m n T), GB/s (bytes()), the loop's
// median and ratio (its time / ours; "n/a" when it was asked for and did not run, "-" when not
// asked for), the worst expert's diff against the float64 reference, the loop's diff to ours, our
// share of a copy of the row's own bytes, and the configuration. Notes follow a row: FAILED and
// why, the loop's n/a reason, how the loop was timed when not as one CUDA graph.
std::string format_grouped_wgrad_table(const std::vector<GroupedWgradRow>& rows);

// The lines under the table, each ending in a newline: the geometric-mean ratio against the loop
// with the rows it covers (`baseline`: the loop was asked for) and what it was given that ours
// was not, the rows without it, the copy shares (lowest and geomean), and the rows that FAILED.
std::string format_grouped_wgrad_summary(const std::vector<GroupedWgradRow>& rows,
                                         bool baseline);

// Exactly: line,m,n,tokens_per_group,groups,tokens,dtype,tag,config,time_us,tflops,gbps,
// loop_time_us,loop_ratio,loop_diff,diff,worst_group,checked_rows,same_bytes_share,
// group_tokens,loop_unavailable,failure
std::string grouped_wgrad_csv_header();
// One line (no newline) in that order: config, group_tokens (';'-separated), the reason and
// failure always quoted; a time that does not exist and the fields computed from it are empty,
// as are diff and worst_group when nothing was compared.
std::string grouped_wgrad_csv_line(const GroupedWgradRow& row);

// {"rows": [...], "geomean_loop_ratio", "rows_without_loop", "failed_rows"}, every measured
// field of each row, times as {median_us, ...}.
std::string grouped_wgrad_rows_to_json(const std::vector<GroupedWgradRow>& rows);

// Without a GPU: each row's plan (plan_grouped_wgrad_items, in the items' order) with its drawn
// tokens, as a table, or as JSON {"measured": false, "device", "note", "rows"}.
std::string format_grouped_wgrad_plans(const std::vector<GroupedWgradItem>& items,
                                       const std::vector<PlanRow>& plans);
std::string grouped_wgrad_plans_json(const std::vector<GroupedWgradItem>& items,
                                     const std::vector<PlanRow>& plans, const std::string& device,
                                     const std::string& note);

}  // namespace autogemm::bench
