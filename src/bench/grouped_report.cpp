// The grouped bench's report (grouped_report.hpp).
#include "bench/grouped_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <nlohmann/json.hpp>

#include "bench/bench_report.hpp"
#include "bench/bench_runner.hpp"
#include "bench/suite_rows.hpp"

namespace autogemm::bench {

namespace {

const char* kind_text(const GroupedItem& item) {
  return item.problem.grouping == Grouping::masked ? "masked" : "contiguous";
}

std::string joined_rows(const std::vector<int64_t>& rows, const char* separator) {
  std::string out;
  for (std::size_t g = 0; g < rows.size(); ++g)
    out += fmt::format("{}{}", g == 0 ? "" : separator, rows[g]);
  return out;
}

bool timed(const GroupedRow& r) { return r.ours.samples > 0; }

// A baseline's median or ratio column: the value, "n/a" (asked for, did not run) or "-".
std::string baseline_field(const GroupedBaseline& b, double value, int decimals) {
  if (b.time) return fmt::format("{:.{}f}", value, decimals);
  return b.unavailable.empty() ? "-" : "n/a";
}

std::string optional_number(bool exists, double value, const char* format) {
  return exists ? fmt::format(fmt::runtime(format), value) : std::string();
}

nlohmann::json baseline_json(const GroupedBaseline& b) {
  nlohmann::json j = nlohmann::json::object();
  if (b.time) {
    j["time_us"] = b.time->median_us;
    j["times"] = timing_json(*b.time);
    j["ratio"] = b.ratio;
  }
  if (!std::isnan(b.diff_to_ours)) j["diff_to_ours"] = b.diff_to_ours;
  if (!b.unavailable.empty()) j["unavailable"] = b.unavailable;
  if (!b.note.empty()) j["note"] = b.note;
  return j;
}

nlohmann::json dense_json(const GroupedDense& d) {
  nlohmann::json j = nlohmann::json::object();
  if (d.time) {
    j["time_us"] = d.time->median_us;
    j["times"] = timing_json(*d.time);
    j["tflops"] = d.tflops;
    j["ratio"] = d.ratio;
  }
  if (!d.config.empty()) j["config"] = d.config;
  if (!d.unavailable.empty()) j["unavailable"] = d.unavailable;
  return j;
}

// The dense twin's median or ratio column: the value, or "n/a" (it did not run).
std::string dense_field(const GroupedRow& r, double value, int decimals) {
  if (r.dense.time) return fmt::format("{:.{}f}", value, decimals);
  return r.dense.unavailable.empty() ? "-" : "n/a";
}

std::string plural(std::size_t n, const char* word) {
  return fmt::format("{} {}{}", n, word, n == 1 ? "" : "s");
}

}  // namespace

std::string grouped_label(const GroupedItem& item) {
  return fmt::format("line {}: {}, {} groups of ~{} rows, {} x {}", item.source.line,
                     kind_text(item), item.problem.num_groups, item.source.m_per_group,
                     item.problem.n, item.problem.k);
}

std::string format_grouped_table(const std::vector<GroupedRow>& rows) {
  std::size_t tag_width = 3;
  for (const GroupedRow& r : rows) tag_width = std::max(tag_width, r.item.source.tag.size());
  std::string out = fmt::format(
      "{:<10} {:>6} {:>8} {:>6} {:>6} {:<{}} {:>10} {:>8} {:>7} {:>10} {:>6} {:>10} {:>6} {:>10} "
      "{:>7} {:>9} {:>5}  {}\n",
      "kind", "groups", "valid_m", "n", "k", "tag", tag_width, "ours_us", "TFLOP/s", "GB/s",
      "loop_us", "ratio", "batched_us", "ratio", "dense_us", "g/dense", "diff", "copy", "config");
  for (const GroupedRow& r : rows) {
    const GroupedItem& item = r.item;
    const bool t = timed(r);
    const bool copy = r.same_bytes_copy.has_value() && t;
    out += fmt::format(
        "{:<10} {:>6} {:>8} {:>6} {:>6} {:<{}} {:>10} {:>8} {:>7} {:>10} {:>6} {:>10} {:>6} "
        "{:>10} {:>7} {:>9} {:>5}  {}",
        kind_text(item), item.problem.num_groups, item.valid_rows(), item.problem.n,
        item.problem.k, item.source.tag, tag_width,
        t ? fmt::format("{:.2f}", r.ours.median_us) : "-",
        t ? fmt::format("{:.1f}", r.tflops) : "-", t ? fmt::format("{:.0f}", r.gbps) : "-",
        baseline_field(r.loop, r.loop.time ? r.loop.time->median_us : 0, 2),
        baseline_field(r.loop, r.loop.ratio, 3),
        baseline_field(r.batched, r.batched.time ? r.batched.time->median_us : 0, 2),
        baseline_field(r.batched, r.batched.ratio, 3),
        dense_field(r, r.dense.time ? r.dense.time->median_us : 0, 2),
        dense_field(r, r.dense.ratio, 3),
        std::isnan(r.diff) ? std::string("-") : fmt::format("{:.2e}", r.diff),
        copy ? fmt::format("{:.0f}%", 100 * same_bytes_share(r)) : "-",
        r.config.empty() && !r.failure.empty() ? "FAILED" : r.config);
    if (!r.failure.empty()) out += fmt::format("  (FAILED: {})", r.failure);
    if (!r.loop.unavailable.empty())
      out += fmt::format("  (no cuBLASLt loop baseline: {})", r.loop.unavailable);
    if (!r.loop.note.empty()) out += fmt::format("  (loop {})", r.loop.note);
    if (!r.batched.unavailable.empty())
      out += fmt::format("  (no cublasGemmGroupedBatchedEx baseline: {})", r.batched.unavailable);
    if (!r.dense.unavailable.empty())
      out += fmt::format("  (no dense twin: {})", r.dense.unavailable);
    out += '\n';
  }
  return out;
}

namespace {

// The dense twin's line (contiguous rows: issue 23's target) and its n/a rows.
std::string format_dense_summary(const std::vector<GroupedRow>& rows) {
  std::string out;
  std::size_t counted = 0, missing = 0;
  for (const GroupedRow& r : rows) {
    counted += r.item.problem.grouping == Grouping::contiguous && r.dense.time && r.failure.empty();
    missing += r.dense.unavailable.empty() ? 0 : 1;
  }
  if (const GroupedRow* lowest = lowest_dense_ratio_contiguous(rows); lowest != nullptr)
    out += fmt::format("grouped TFLOP/s / our dense kernel's on one GEMM of the same valid rows "
                       "(sum of M x N x K, same types), contiguous rows: geomean {:.3f} over {}, "
                       "lowest {:.3f} (line {})\n",
                       geomean_dense_ratio_contiguous(rows), plural(counted, "row"),
                       lowest->dense.ratio, lowest->item.source.line);
  if (missing > 0)
    out += fmt::format("{} of {} had no dense twin (n/a)\n", missing,
                       plural(rows.size(), "row"));
  return out;
}

}  // namespace

std::string format_grouped_summary(const std::vector<GroupedRow>& rows, bool baseline) {
  std::string out;
  const std::size_t total = rows.size();
  if (baseline) {
    const auto line = [&](const char* name, double geomean, GroupedBaseline GroupedRow::*b) {
      std::size_t counted = 0, missing = 0;
      for (const GroupedRow& r : rows) {
        counted += (r.*b).time && r.failure.empty() ? 1 : 0;
        missing += (r.*b).unavailable.empty() ? 0 : 1;
      }
      out += fmt::format("geomean ratio against {} (its time / ours; > 1: autogemm faster): {:.3f} "
                         "over {} with it\n",
                         name, geomean, plural(counted, "row"));
      if (missing > 0)
        out += fmt::format("{} of {} had no {} baseline (n/a)\n", missing, plural(total, "row"),
                           name);
    };
    line("the per-group cuBLASLt loop", geomean_loop_ratio(rows), &GroupedRow::loop);
    line("cublasGemmGroupedBatchedEx", geomean_batched_ratio(rows), &GroupedRow::batched);
    out += "both baselines are given every group's M on the host, which ours is not (it reads "
           "group_index or masked_m on the device: no host synchronisation, CUDA-graph "
           "capturable); the loop is timed as one CUDA graph of its calls (a row that could not "
           "be captured says so)\n";
    if (std::any_of(rows.begin(), rows.end(),
                    [](const GroupedRow& r) { return block_scaled_fp8(r.item.problem); }))
      out += "FP8 rows: the loop is block-scaled cuBLASLt (its scales converted to its layout "
             "before timing), each group's M rounded up to a multiple of 4 (its rule; the extra "
             "rows are padding of its own D, not compared); cublasGemmGroupedBatchedEx takes no "
             "block-scaled FP8, so it is n/a on every FP8 row\n";
  }
  out += format_dense_summary(rows);
  out += copy_share_line(
      rows, [](const GroupedRow& r) { return same_bytes_share(r); },
      "masked rows against a copy of their own bytes timed like them (cudaMemcpy D2D, L2 "
      "flushed)");
  out += failed_rows_line(rows);
  return out;
}

std::string grouped_csv_header() {
  return "line,kind,groups,m_per_group,valid_m,m,n,k,dtype,out_dtype,tag,config,time_us,tflops,"
         "gbps,loop_time_us,loop_ratio,batched_time_us,batched_ratio,dense_time_us,dense_tflops,"
         "dense_ratio,diff,worst_group,checked_rows,same_bytes_share,group_rows,loop_unavailable,"
         "batched_unavailable,dense_config,dense_unavailable,failure";
}

std::string grouped_csv_line(const GroupedRow& r) {
  const GroupedItem& item = r.item;
  const GemmProblem& p = item.problem;
  const bool t = timed(r);
  const bool compared = !std::isnan(r.diff);
  return fmt::format(
      "{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},"
      "{},{}",
      item.source.line, kind_text(item), p.num_groups, item.source.m_per_group,
      item.valid_rows(), p.m, p.n, p.k, dtype_label(p), to_string(p.d_type),
      item.source.tag, csv_quoted(r.config), optional_number(t, r.ours.median_us, "{:.3f}"),
      optional_number(t, r.tflops, "{:.2f}"), optional_number(t, r.gbps, "{:.2f}"),
      optional_number(r.loop.time.has_value(), r.loop.time ? r.loop.time->median_us : 0, "{:.3f}"),
      optional_number(r.loop.time.has_value(), r.loop.ratio, "{:.4f}"),
      optional_number(r.batched.time.has_value(), r.batched.time ? r.batched.time->median_us : 0,
                      "{:.3f}"),
      optional_number(r.batched.time.has_value(), r.batched.ratio, "{:.4f}"),
      optional_number(r.dense.time.has_value(), r.dense.time ? r.dense.time->median_us : 0,
                      "{:.3f}"),
      optional_number(r.dense.time.has_value(), r.dense.tflops, "{:.2f}"),
      optional_number(r.dense.time.has_value(), r.dense.ratio, "{:.4f}"),
      optional_number(compared, r.diff, "{:.3e}"),
      compared ? std::to_string(r.worst_group) : std::string(), r.checked_rows,
      optional_number(r.same_bytes_copy.has_value() && t, same_bytes_share(r), "{:.4f}"),
      csv_quoted(joined_rows(item.group_rows, ";")), csv_quoted(r.loop.unavailable),
      csv_quoted(r.batched.unavailable), csv_quoted(r.dense.config),
      csv_quoted(r.dense.unavailable), csv_quoted(r.failure));
}

std::string grouped_rows_to_json(const std::vector<GroupedRow>& rows) {
  nlohmann::json list = nlohmann::json::array();
  for (const GroupedRow& r : rows) {
    const GroupedItem& item = r.item;
    const GemmProblem& p = item.problem;
    nlohmann::json j = {{"line", item.source.line},
                        {"kind", kind_text(item)},
                        {"groups", p.num_groups},
                        {"m_per_group", item.source.m_per_group},
                        {"group_rows", item.group_rows},
                        {"valid_m", item.valid_rows()},
                        {"m", p.m},
                        {"n", p.n},
                        {"k", p.k},
                        {"tag", item.source.tag},
                        {"dtype", dtype_label(p)},
                        {"out_dtype", std::string(to_string(p.d_type))},
                        {"useful_flops", item.useful_flops()},
                        {"bytes", item.bytes()},
                        {"config", r.config},
                        {"reason", r.reason},
                        {"unwritten", r.unwritten},
                        {"checked_rows", r.checked_rows},
                        {"diff_limit", r.diff_limit},
                        {"loop", baseline_json(r.loop)},
                        {"batched", baseline_json(r.batched)},
                        {"dense", dense_json(r.dense)}};
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
    if (p.grouping == Grouping::masked) j["poison_changed"] = r.poison_changed;
    if (r.same_bytes_copy && timed(r)) {
      j["same_bytes_copy_us"] = r.same_bytes_copy->median_us;
      j["same_bytes_share"] = same_bytes_share(r);
    }
    if (!r.failure.empty()) j["failure"] = r.failure;
    list.push_back(std::move(j));
  }
  nlohmann::json out = {{"rows", std::move(list)},
                        {"geomean_loop_ratio", geomean_loop_ratio(rows)},
                        {"geomean_batched_ratio", geomean_batched_ratio(rows)},
                        {"geomean_dense_ratio_contiguous", geomean_dense_ratio_contiguous(rows)},
                        {"rows_without_baseline", grouped_rows_without_baseline(rows)},
                        {"failed_rows", grouped_failed_rows(rows)}};
  if (const GroupedRow* lowest = lowest_dense_ratio_contiguous(rows); lowest != nullptr)
    out["lowest_dense_ratio_contiguous"] = {{"ratio", lowest->dense.ratio},
                                            {"line", lowest->item.source.line}};
  return out.dump(2);
}

std::string format_grouped_draws(const std::vector<GroupedItem>& items) {
  std::size_t tag_width = 3;
  for (const GroupedItem& item : items) tag_width = std::max(tag_width, item.source.tag.size());
  std::string out = fmt::format("{:>4} {:<10} {:>6} {:>11} {:>8} {:>7} {:>6} {:>6} {:<{}}  {}\n",
                                "line", "kind", "groups", "m_per_group", "valid_m", "m", "n", "k",
                                "tag", tag_width, "M per group");
  for (const GroupedItem& item : items)
    out += fmt::format("{:>4} {:<10} {:>6} {:>11} {:>8} {:>7} {:>6} {:>6} {:<{}}  {}\n",
                       item.source.line, kind_text(item), item.problem.num_groups,
                       item.source.m_per_group, item.valid_rows(), item.problem.m,
                       item.problem.n, item.problem.k, item.source.tag, tag_width,
                       joined_rows(item.group_rows, " "));
  return out;
}

std::string grouped_draws_json(const std::vector<GroupedItem>& items, const std::string& note) {
  nlohmann::json list = nlohmann::json::array();
  for (const GroupedItem& item : items)
    list.push_back({{"line", item.source.line},
                    {"kind", kind_text(item)},
                    {"groups", item.problem.num_groups},
                    {"m_per_group", item.source.m_per_group},
                    {"group_rows", item.group_rows},
                    {"row_starts", item.row_starts},
                    {"valid_m", item.valid_rows()},
                    {"m", item.problem.m},
                    {"n", item.problem.n},
                    {"k", item.problem.k},
                    {"tag", item.source.tag}});
  const nlohmann::json out = {{"measured", false}, {"note", note}, {"rows", std::move(list)}};
  return out.dump(2);
}

}  // namespace autogemm::bench
