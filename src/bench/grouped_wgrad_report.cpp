// The grouped weight-gradient bench's report (grouped_wgrad_report.hpp).
#include "bench/grouped_wgrad_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_report.hpp"
#include "bench/suite_rows.hpp"

namespace autogemm::bench {

namespace {

bool timed(const GroupedWgradRow& r) { return r.ours.samples > 0; }

std::string joined(const std::vector<int64_t>& values, const char* separator) {
  std::string out;
  for (std::size_t i = 0; i < values.size(); ++i)
    out += fmt::format("{}{}", i == 0 ? "" : separator, values[i]);
  return out;
}

std::string plural(std::size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

// The loop's median or ratio column: the value, "n/a" (asked for, did not run) or "-".
std::string loop_field(const GroupedWgradRow& r, double value, int decimals) {
  if (r.loop.time) return fmt::format("{:.{}f}", value, decimals);
  return r.loop.unavailable.empty() ? "-" : "n/a";
}

std::string diff_text(double diff) {
  return std::isnan(diff) ? std::string("-") : fmt::format("{:.2e}", diff);
}

std::string optional_number(bool exists, double value, const char* format) {
  return exists ? fmt::format(fmt::runtime(format), value) : std::string();
}

std::size_t tag_width(const std::vector<GroupedWgradItem>& items) {
  std::size_t width = 3;
  for (const GroupedWgradItem& item : items) width = std::max(width, item.source.tag.size());
  return width;
}

std::vector<GroupedWgradItem> items_of(const std::vector<GroupedWgradRow>& rows) {
  std::vector<GroupedWgradItem> items;
  for (const GroupedWgradRow& r : rows) items.push_back(r.item);
  return items;
}

// "44-83": the fewest and most tokens an expert drew.
std::string token_range(const GroupedWgradItem& item) {
  const auto [lo, hi] = std::minmax_element(item.group_tokens.begin(), item.group_tokens.end());
  return fmt::format("{}-{}", *lo, *hi);
}

}  // namespace

std::string format_grouped_wgrad_table(const std::vector<GroupedWgradRow>& rows) {
  const std::size_t width = tag_width(items_of(rows));
  std::string out = fmt::format(
      "{:>4} {:<{}} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6} {:>10} {:>8} {:>7} {:>10} {:>6} {:>9} "
      "{:>9} {:>5}  {}\n",
      "line", "tag", width, "experts", "tok/exp", "T", "m", "n", "dW_GB", "ours_us", "TFLOP/s",
      "GB/s", "loop_us", "ratio", "diff", "loop_diff", "copy", "config");
  for (const GroupedWgradRow& r : rows) {
    const GroupedWgradItem& item = r.item;
    const GemmProblem& p = item.problem;
    const bool t = timed(r);
    out += fmt::format(
        "{:>4} {:<{}} {:>7} {:>7} {:>6} {:>6} {:>6} {:>6.2f} {:>10} {:>8} {:>7} {:>10} {:>6} "
        "{:>9} {:>9} {:>5}  {}",
        item.source.line, item.source.tag, width, p.num_groups, item.source.tokens_per_group,
        item.tokens(), p.m, p.n, item.d_bytes() / 1e9,
        t ? fmt::format("{:.2f}", r.ours.median_us) : "-",
        t ? fmt::format("{:.1f}", r.tflops) : "-", t ? fmt::format("{:.0f}", r.gbps) : "-",
        loop_field(r, r.loop.time ? r.loop.time->median_us : 0, 2), loop_field(r, r.loop.ratio, 3),
        diff_text(r.diff), diff_text(r.loop.diff_to_ours),
        r.same_bytes_copy && t ? fmt::format("{:.0f}%", 100 * same_bytes_share(r)) : "-",
        r.config.empty() && !r.failure.empty() ? "FAILED" : r.config);
    if (!r.failure.empty()) out += fmt::format("  (FAILED: {})", r.failure);
    if (!r.loop.unavailable.empty())
      out += fmt::format("  (no cuBLASLt loop baseline: {})", r.loop.unavailable);
    if (!r.loop.note.empty()) out += fmt::format("  (loop {})", r.loop.note);
    out += '\n';
  }
  return out;
}

std::string format_grouped_wgrad_summary(const std::vector<GroupedWgradRow>& rows,
                                         bool baseline) {
  std::string out;
  const std::size_t total = rows.size();
  if (baseline) {
    std::size_t counted = 0;
    for (const GroupedWgradRow& r : rows) counted += r.loop.time && r.failure.empty() ? 1 : 0;
    out += fmt::format("geomean ratio against the per-expert cuBLASLt loop (its time / ours; > 1: "
                       "autogemm faster): {:.3f} over {} with it\n",
                       grouped_wgrad_geomean_loop_ratio(rows), plural(counted, "row"));
    if (const std::size_t missing = grouped_wgrad_rows_without_loop(rows); missing > 0)
      out += fmt::format("{} of {} had no cuBLASLt loop baseline (n/a)\n", missing,
                         plural(total, "row"));
    out += "the loop (one cuBLASLt dW_g += dY_g^T X_g per expert, fp32, beta 1) is given every "
           "expert's tokens on the host, which ours is not (it reads group_ends on the device: no "
           "host synchronisation, CUDA-graph capturable); it is timed as one CUDA graph of its "
           "calls (a row that could not be captured says so)\n";
  }
  out += copy_share_line(
      rows, [](const GroupedWgradRow& r) { return same_bytes_share(r); },
      "against a copy of each row's own bytes (dY and X read, dW read and written; cudaMemcpy "
      "D2D timed like it, L2 flushed)");
  out += failed_rows_line(rows);
  return out;
}

std::string grouped_wgrad_csv_header() {
  return "line,m,n,tokens_per_group,groups,tokens,dtype,tag,config,time_us,tflops,gbps,"
         "loop_time_us,loop_ratio,loop_diff,diff,worst_group,checked_rows,same_bytes_share,"
         "group_tokens,loop_unavailable,failure";
}

std::string grouped_wgrad_csv_line(const GroupedWgradRow& r) {
  const GroupedWgradItem& item = r.item;
  const GemmProblem& p = item.problem;
  const bool t = timed(r);
  const bool compared = !std::isnan(r.diff);
  return fmt::format(
      "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{}", item.source.line, p.m,
      p.n, item.source.tokens_per_group, p.num_groups, item.tokens(), dtype_label(p),
      item.source.tag, csv_quoted(r.config), optional_number(t, r.ours.median_us, "{:.3f}"),
      optional_number(t, r.tflops, "{:.2f}"), optional_number(t, r.gbps, "{:.2f}"),
      optional_number(r.loop.time.has_value(), r.loop.time ? r.loop.time->median_us : 0, "{:.3f}"),
      optional_number(r.loop.time.has_value(), r.loop.ratio, "{:.4f}"),
      optional_number(!std::isnan(r.loop.diff_to_ours), r.loop.diff_to_ours, "{:.3e}"),
      optional_number(compared, r.diff, "{:.3e}"),
      compared ? std::to_string(r.worst_group) : std::string(), r.checked_rows,
      optional_number(r.same_bytes_copy.has_value() && t, same_bytes_share(r), "{:.4f}"),
      csv_quoted(joined(item.group_tokens, ";")), csv_quoted(r.loop.unavailable),
      csv_quoted(r.failure));
}

std::string grouped_wgrad_rows_to_json(const std::vector<GroupedWgradRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const GroupedWgradRow& r : rows) {
    const GroupedWgradItem& item = r.item;
    const GemmProblem& p = item.problem;
    nlohmann::json loop = nlohmann::json::object();
    if (r.loop.time) {
      loop["time_us"] = r.loop.time->median_us;
      loop["times"] = timing_json(*r.loop.time);
      loop["ratio"] = r.loop.ratio;
    }
    if (!std::isnan(r.loop.diff_to_ours)) loop["diff_to_ours"] = r.loop.diff_to_ours;
    if (!r.loop.unavailable.empty()) loop["unavailable"] = r.loop.unavailable;
    if (!r.loop.note.empty()) loop["note"] = r.loop.note;
    nlohmann::json j = {{"line", item.source.line},
                        {"tag", item.source.tag},
                        {"m", p.m},
                        {"n", p.n},
                        {"groups", p.num_groups},
                        {"tokens_per_group", item.source.tokens_per_group},
                        {"group_tokens", item.group_tokens},
                        {"tokens", item.tokens()},
                        {"dtype", dtype_label(p)},
                        {"flops", item.flops()},
                        {"bytes", item.bytes()},
                        {"dw_bytes", item.d_bytes()},
                        {"config", r.config},
                        {"reason", r.reason},
                        {"checked_rows", r.checked_rows},
                        {"unwritten", r.unwritten},
                        {"diff_limit", r.diff_limit},
                        {"loop", std::move(loop)}};
    if (timed(r)) {
      j["time_us"] = r.ours.median_us;
      j["ours"] = timing_json(r.ours);
      j["tflops"] = r.tflops;
      j["gbps"] = r.gbps;
    }
    if (!std::isnan(r.diff)) {
      j["diff"] = r.diff;
      j["worst_group"] = r.worst_group;
    }
    if (r.same_bytes_copy && timed(r)) {
      j["same_bytes_copy_us"] = r.same_bytes_copy->median_us;
      j["same_bytes_share"] = same_bytes_share(r);
    }
    if (!r.failure.empty()) j["failure"] = r.failure;
    list.push_back(std::move(j));
  }
  nlohmann::json out = {{"rows", std::move(list)},
                        {"geomean_loop_ratio", grouped_wgrad_geomean_loop_ratio(rows)},
                        {"rows_without_loop", grouped_wgrad_rows_without_loop(rows)},
                        {"failed_rows", grouped_wgrad_failed_rows(rows)}};
  return out.dump(2);
}

std::string format_grouped_wgrad_plans(const std::vector<GroupedWgradItem>& items,
                                       const std::vector<PlanRow>& plans) {
  const std::size_t width = tag_width(items);
  std::size_t config_width = 6;
  for (const PlanRow& r : plans) config_width = std::max(config_width, r.config.size());
  std::string out = fmt::format(
      "{:>4} {:<{}} {:>7} {:>7} {:>9} {:>6} {:>6} {:>6} {:>6} {:<{}} {:>13} {:>17}  {}\n", "line",
      "tag", width, "experts", "tok/exp", "drawn", "T", "m", "n", "dW_GB", "config", config_width,
      "predicted_us", "predicted TFLOP/s", "path");
  for (std::size_t i = 0; i < items.size() && i < plans.size(); ++i) {
    const GroupedWgradItem& item = items[i];
    const PlanRow& plan = plans[i];
    out += fmt::format(
        "{:>4} {:<{}} {:>7} {:>7} {:>9} {:>6} {:>6} {:>6} {:>6.2f} {:<{}} {:>13.2f} {:>17.1f}  "
        "{}\n",
        item.source.line, item.source.tag, width, item.problem.num_groups,
        item.source.tokens_per_group, token_range(item), item.tokens(), item.problem.m,
        item.problem.n, item.d_bytes() / 1e9, plan.config, config_width, plan.predicted_us,
        plan.predicted_tflops, plan.path_reason);
  }
  return out;
}

std::string grouped_wgrad_plans_json(const std::vector<GroupedWgradItem>& items,
                                     const std::vector<PlanRow>& plans, const std::string& device,
                                     const std::string& note) {
  nlohmann::json list = nlohmann::json::array();
  for (std::size_t i = 0; i < items.size() && i < plans.size(); ++i) {
    const GroupedWgradItem& item = items[i];
    const PlanRow& plan = plans[i];
    list.push_back({{"line", item.source.line}, {"tag", item.source.tag},
                    {"m", item.problem.m}, {"n", item.problem.n},
                    {"groups", item.problem.num_groups},
                    {"tokens_per_group", item.source.tokens_per_group},
                    {"group_tokens", item.group_tokens}, {"tokens", item.tokens()},
                    {"dtype", dtype_label(item.problem)}, {"dw_bytes", item.d_bytes()},
                    {"config", plan.config}, {"path_reason", plan.path_reason},
                    {"predicted_us", plan.predicted_us},
                    {"predicted_tflops", plan.predicted_tflops}});
  }
  nlohmann::json out = {
      {"measured", false}, {"device", device}, {"note", note}, {"rows", std::move(list)}};
  return out.dump(2);
}

}  // namespace autogemm::bench
