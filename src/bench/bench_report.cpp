#include "bench/bench_report.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <cstdlib>
#include <map>
#include <optional>
#include <stdexcept>
#include <nlohmann/json.hpp>

#include "autogemm/errors.hpp"
#include "bench/bench_summary.hpp"
#include "bench/copy_bandwidth.hpp"

namespace autogemm::bench {

namespace {

std::string quoted(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"') out += '"';  // RFC 4180: a quote inside a quoted field is doubled
    out += c;
  }
  return out + "\"";
}

std::string shape_text(const GemmProblem& p) { return fmt::format("{}x{}x{}", p.m, p.n, p.k); }

nlohmann::json stats_json(const TimingStats& s) {
  return {{"median_us", s.median_us}, {"min_us", s.min_us}, {"max_us", s.max_us},
          {"mean_us", s.mean_us}, {"samples", s.samples}};
}

// Column text: a fixed number of decimals, or "-" for a value that does not exist.
std::string number_or_dash(bool exists, double v, int decimals) {
  return exists ? fmt::format("{:.{}f}", v, decimals) : std::string("-");
}

// One CSV line's fields (RFC 4180: a quoted field may hold commas and doubled quotes). Returns
// false for an unterminated quote.
bool split_csv_line(const std::string& line, std::vector<std::string>& fields) {
  fields.assign(1, std::string());
  bool quoted_field = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    const char c = line[i];
    if (quoted_field) {
      if (c != '"') {
        fields.back() += c;
      } else if (i + 1 < line.size() && line[i + 1] == '"') {
        fields.back() += '"';
        ++i;
      } else {
        quoted_field = false;
      }
    } else if (c == '"') {
      quoted_field = true;
    } else if (c == ',') {
      fields.emplace_back();
    } else {
      fields.back() += c;
    }
  }
  return !quoted_field;
}

// Reads one data line of a bench CSV into a row; throws a message for the caller to place.
class CsvRowReader {
 public:
  explicit CsvRowReader(const std::vector<std::string>& header) {
    for (std::size_t i = 0; i < header.size(); ++i) columns_[header[i]] = i;
    for (const char* name : {"m", "n", "k", "dtype", "time_us"})
      if (!columns_.count(name))
        throw std::runtime_error(fmt::format("the header has no \"{}\" column (expected {})",
                                             name, csv_header()));
  }

  // nullopt for a row without a time: it failed before anything was timed, or autogemm did not
  // serve it (nothing to draw).
  std::optional<BenchRow> read(const std::vector<std::string>& fields) {
    fields_ = &fields;
    BenchRow r;
    GemmProblem& p = r.problem;
    p.m = size("m");
    p.n = size("n");
    p.k = size("k");
    r.failure = field("failure");
    if (field("time_us").empty()) return std::nullopt;
    const std::string dtype = field("dtype");
    if (dtype == "fp8") {
      p.a_type = p.b_type = DType::e4m3;
      p.d_type = DType::bf16;
      p.scaling = Scaling::block_1x128_128x128;
    } else if (dtype == "bf16" || dtype == "fp16") {
      p.a_type = p.b_type = p.d_type = *parse_dtype(dtype);
    } else {
      throw std::runtime_error(fmt::format("dtype \"{}\": expected bf16, fp16 or fp8", dtype));
    }
    if (const std::string layout = field("layout"); !layout.empty()) {
      const auto parsed = parse_layout(layout);
      if (!parsed)
        throw std::runtime_error(fmt::format("layout \"{}\": expected nt, nn, tn or tt", layout));
      p.layout = *parsed;
    }
    r.tag = field("tag");
    r.config = field("config");
    r.used_vendor = r.config == "cuBLASLt";
    r.ours = one_sample(number("time_us"));
    r.tflops = optional_number("tflops").value_or(0);
    r.gbps = optional_number("gbps").value_or(0);
    if (const auto base = optional_number("baseline_time_us")) {
      r.baseline = one_sample(*base);
      r.baseline_tflops = optional_number("baseline_tflops").value_or(0);
      r.ratio = optional_number("ratio").value_or(r.ours.median_us > 0
                                                      ? *base / r.ours.median_us : 0);
    }
    const std::optional<double> diff = optional_number("diff");
    r.diff = diff.value_or(std::nan(""));
    r.diff_ref = columns_.count("diff_ref") ? field("diff_ref") : diff ? "cublaslt" : "";
    return r;
  }

 private:
  static TimingStats one_sample(double us) { return TimingStats{1, us, us, us, us}; }

  // The named column's text; empty when the file has no such column.
  std::string field(const char* name) const {
    const auto it = columns_.find(name);
    if (it == columns_.end()) return {};
    if (it->second >= fields_->size())
      throw std::runtime_error(fmt::format("{} fields, the header names {}", fields_->size(),
                                           columns_.size()));
    return (*fields_)[it->second];
  }

  int64_t size(const char* name) const {
    const std::string text = field(name);
    int64_t v = 0;
    const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
    if (ec != std::errc() || end != text.data() + text.size() || v < 1)
      throw std::runtime_error(fmt::format("{} \"{}\": expected a size >= 1", name, text));
    return v;
  }

  std::optional<double> optional_number(const char* name) const {
    const std::string text = field(name);
    if (text.empty()) return std::nullopt;
    char* end = nullptr;
    const double v = std::strtod(text.c_str(), &end);
    if (end != text.c_str() + text.size())
      throw std::runtime_error(fmt::format("{} \"{}\": expected a number", name, text));
    return v;
  }

  double number(const char* name) const {
    const auto v = optional_number(name);
    if (!v) throw std::runtime_error(fmt::format("{} is empty", name));
    return *v;
  }

  std::map<std::string, std::size_t> columns_;
  const std::vector<std::string>* fields_ = nullptr;
};

}  // namespace

std::vector<BenchRow> rows_from_csv(std::istream& in, const std::string& argument,
                                    const std::string& path) {
  std::vector<BenchRow> rows;
  std::optional<CsvRowReader> reader;
  std::string line;
  std::vector<std::string> fields;
  for (int number = 1; std::getline(in, line); ++number) {
    if (!line.empty() && line.back() == '\r') line.pop_back();  // CRLF files
    if (line.find_first_not_of(" \t") == std::string::npos || line.front() == '#') continue;
    try {
      if (!split_csv_line(line, fields)) throw std::runtime_error("a quote is not closed");
      if (!reader)
        reader.emplace(fields);
      else if (std::optional<BenchRow> row = reader->read(fields))
        rows.push_back(std::move(*row));
    } catch (const std::runtime_error& e) {
      throw InvalidArgument(argument, path, fmt::format("line {}: {}", number, e.what()));
    }
  }
  if (in.bad()) throw InvalidArgument(argument, path, "could not be read");
  if (!reader) throw InvalidArgument(argument, path, "is empty (no CSV header)");
  return rows;
}

std::string csv_header() {
  return "m,n,k,dtype,layout,config,time_us,tflops,gbps,baseline_time_us,baseline_tflops,ratio,"
         "diff,diff_ref,failure";
}

std::string csv_line(const BenchRow& r) {
  std::string line = fmt::format("{},{},{},{},{},{}", r.problem.m, r.problem.n, r.problem.k,
                                 dtype_label(r.problem), to_string(r.problem.layout),
                                 quoted(r.config));
  if (r.ours.samples > 0)
    line += fmt::format(",{:.3f},{:.2f},{:.2f}", r.ours.median_us, r.tflops, r.gbps);
  else
    line += ",,,";
  if (r.baseline)
    line += fmt::format(",{:.3f},{:.2f},{:.4f}", r.baseline->median_us, r.baseline_tflops,
                        r.ratio);
  else
    line += ",,,";
  if (!r.diff_ref.empty())
    line += fmt::format(",{:.3e},{}", r.diff, r.diff_ref);
  else
    line += ",,";
  return line + "," + quoted(r.failure);
}

std::string rows_to_json(const std::vector<BenchRow>& rows, const CopyBandwidth* copy) {
  nlohmann::json list = nlohmann::json::array();
  for (const BenchRow& r : rows) {
    nlohmann::json j = {
        {"m", r.problem.m}, {"n", r.problem.n}, {"k", r.problem.k}, {"tag", r.tag},
        {"dtype", dtype_label(r.problem)}, {"layout", std::string(to_string(r.problem.layout))},
        {"d_type", std::string(to_string(r.problem.d_type))},
        {"config", r.config}, {"used_vendor", r.used_vendor}, {"reason", r.reason},
        {"time_us", r.ours.median_us}, {"min_time_us", r.ours.min_us},
        {"tflops", r.tflops}, {"gbps", r.gbps}, {"unwritten", r.unwritten},
        {"ours", stats_json(r.ours)}};
    if (r.predicted_us > 0) j["predicted_us"] = r.predicted_us;
    if (r.baseline) {
      j["baseline_time_us"] = r.baseline->median_us;
      j["baseline_min_time_us"] = r.baseline->min_us;
      j["baseline_tflops"] = r.baseline_tflops;
      j["baseline"] = stats_json(*r.baseline);
      j["ratio"] = r.ratio;
    }
    if (!r.diff_ref.empty()) {
      j["diff"] = r.diff;
      j["diff_ref"] = r.diff_ref;
      j["diff_limit"] = r.diff_limit;
      j["checked_rows"] = r.checked_rows;
    }
    if (!r.failure.empty()) j["failure"] = r.failure;
    if (!r.ours_unavailable.empty()) j["ours_unavailable"] = r.ours_unavailable;
    if (r.baseline_fp8_per_tensor) {
      j["baseline_fp8_per_tensor_time_us"] = r.baseline_fp8_per_tensor->median_us;
      j["baseline_fp8_per_tensor_tflops"] = r.baseline_fp8_per_tensor_tflops;
      j["baseline_fp8_per_tensor"] = stats_json(*r.baseline_fp8_per_tensor);
    }
    if (!r.baseline_unavailable.empty()) j["baseline_unavailable"] = r.baseline_unavailable;
    if (!r.baseline_fp8_per_tensor_unavailable.empty())
      j["baseline_fp8_per_tensor_unavailable"] = r.baseline_fp8_per_tensor_unavailable;
    if (r.quantize_us > 0) j["quantize_us"] = r.quantize_us;
    if (copy != nullptr && is_memory_bound(r) && r.ours.samples > 0)
      j["copy_share"] = copy_share(r, copy->gbps);
    if (r.same_bytes_copy) {
      j["same_bytes_copy_us"] = r.same_bytes_copy->median_us;
      j["same_bytes_share"] = same_bytes_share(r);
    }
    if (!r.problem.epilogue.empty()) j["epilogue"] = r.problem.epilogue.describe();
    if (r.plain && r.unfused) {
      j["plain_time_us"] = r.plain->median_us;
      j["unfused_time_us"] = r.unfused->median_us;
      j["plain"] = stats_json(*r.plain);
      j["unfused"] = stats_json(*r.unfused);
    }
    list.push_back(std::move(j));
  }
  nlohmann::json out = {{"rows", std::move(list)},
                         {"geomean_ratio", geomean_ratio(rows)},
                         {"rows_without_baseline", rows_without_baseline(rows)},
                         {"rows_not_served", rows_not_served(rows)},
                         {"failed_rows", failed_rows(rows)},
                         {"summary", summary_json(summarize_suite(rows))}};
  if (const EpilogueSummary e = summarize_epilogue(rows); e.rows > 0)
    out["epilogue"] = {{"rows", e.rows},
                       {"geomean_unfused_over_fused", e.geomean_unfused_over_fused},
                       {"compute_bound_rows", e.compute_bound_rows},
                       {"max_compute_bound_overhead", e.max_compute_bound_overhead},
                       {"max_overhead_shape", e.max_overhead_shape}};
  if (copy != nullptr) {
    const MemoryBoundSummary s = memory_bound_summary(timed_rows(rows), copy->gbps);
    out["copy_gbps"] = copy->gbps;
    out["copy_bytes"] = copy->bytes;
    out["copy"] = stats_json(copy->stats);
    out["memory_bound"] = {{"max_m", kMemoryBoundMaxM}, {"rows", s.rows},
                           {"min_share", s.min_share}, {"min_shape", s.min_shape},
                           {"geomean_share", s.geomean_share},
                           {"same_bytes_rows", s.same_bytes_rows},
                           {"same_bytes_min_share", s.same_bytes_min_share},
                           {"same_bytes_min_shape", s.same_bytes_min_shape},
                           {"same_bytes_geomean_share", s.same_bytes_geomean_share}};
  }
  return out.dump(2);
}

std::string plan_rows_to_json(const std::vector<PlanRow>& rows, const std::string& device,
                              const std::string& note) {
  nlohmann::json list = nlohmann::json::array();
  for (const PlanRow& r : rows)
    list.push_back({{"m", r.problem.m}, {"n", r.problem.n}, {"k", r.problem.k}, {"tag", r.tag},
                    {"dtype", dtype_label(r.problem)},
                    {"layout", std::string(to_string(r.problem.layout))},
                    {"config", r.config}, {"path_reason", r.path_reason},
                    {"predicted_us", r.predicted_us}, {"predicted_tflops", r.predicted_tflops}});
  nlohmann::json out = {
      {"measured", false}, {"device", device}, {"note", note}, {"rows", std::move(list)}};
  return out.dump(2);
}

std::string format_table(const std::vector<BenchRow>& rows) {
  std::size_t config_width = 6;
  bool per_tensor = false;  // FP8 rows: also the per-tensor-scaled cuBLASLt time
  bool epilogue = false;    // fused-epilogue rows: also our plain GEMM and the unfused sequence
  for (const BenchRow& r : rows) {
    config_width = std::max(config_width, r.config.size());
    per_tensor = per_tensor || r.baseline_fp8_per_tensor.has_value();
    epilogue = epilogue || (r.plain && r.unfused);
  }
  std::string out = fmt::format("{:>6} {:>6} {:>6} {:<8} {:<{}} {:>10} {:>8} {:>8} {:>10} {:>8} {:>7} {:>9} {:<8}",
                                "m", "n", "k", "tag", "config", config_width, "time_us",
                                "TFLOP/s", "GB/s", "cuBLASLt", "TFLOP/s", "ratio", "diff", "ref");
  if (per_tensor) out += fmt::format(" {:>12}", "per-tensor");
  if (epilogue)
    out += fmt::format(" {:>10} {:>10} {:>9} {:>8}", "plain_us", "unfused_us", "overhead",
                       "speedup");
  out += "\n";
  for (const BenchRow& r : rows) {
    const bool timed = r.ours.samples > 0;
    const bool base = r.baseline.has_value();
    const bool served = r.ours_unavailable.empty();
    // "n/a": cuBLASLt could not serve the baseline (or, on a row autogemm did not serve, the
    // row: the baseline is the same library); "-": none was asked for.
    const auto baseline_field = [&](double v, int decimals) {
      if (base) return fmt::format("{:.{}f}", v, decimals);
      return std::string(r.baseline_unavailable.empty() && served ? "-" : "n/a");
    };
    const std::string config = !served                                ? std::string("n/a")
                               : r.config.empty() && !r.failure.empty() ? std::string("FAILED")
                                                                        : r.config;
    out += fmt::format("{:>6} {:>6} {:>6} {:<8} {:<{}} {:>10} {:>8} {:>8} {:>10} {:>8} {:>7} {:>9} {:<8}",
                       r.problem.m, r.problem.n, r.problem.k, r.tag, config, config_width,
                       number_or_dash(timed, r.ours.median_us, 2),
                       number_or_dash(timed, r.tflops, 1), number_or_dash(timed, r.gbps, 0),
                       baseline_field(base ? r.baseline->median_us : 0, 2),
                       baseline_field(r.baseline_tflops, 1), baseline_field(r.ratio, 3),
                       r.diff_ref.empty() ? std::string("-") : fmt::format("{:.2e}", r.diff),
                       r.diff_ref.empty() ? "-" : r.diff_ref == "cublaslt" ? "cuBLASLt"
                                                                           : r.diff_ref);
    if (per_tensor) {
      const bool pt = r.baseline_fp8_per_tensor.has_value();
      out += fmt::format(" {:>12}", number_or_dash(pt, pt ? r.baseline_fp8_per_tensor->median_us : 0, 2));
    }
    if (epilogue) {
      // overhead: fused / plain - 1 (what fusing costs); speedup: unfused / fused.
      const bool e = r.plain && r.unfused && timed;
      out += fmt::format(
          " {:>10} {:>10} {:>9} {:>8}", number_or_dash(e, e ? r.plain->median_us : 0, 2),
          number_or_dash(e, e ? r.unfused->median_us : 0, 2),
          e ? fmt::format("{:+.1f}%", 100 * (r.ours.median_us / r.plain->median_us - 1)) : "-",
          number_or_dash(e, e ? r.unfused->median_us / r.ours.median_us : 0, 3));
    }
    if (!r.failure.empty()) out += fmt::format("  (FAILED: {})", r.failure);
    if (!served)
      out += fmt::format("  (not served: gemm() runs this shape through cuBLASLt, which declined "
                         "it: {})", r.ours_unavailable);
    if (r.unwritten > 0 && r.failure.empty())
      out += fmt::format("  ({} outputs not written)", r.unwritten);
    if (r.diff_ref == "float64" && r.checked_rows < r.problem.m)
      out += fmt::format("  (diff over the first {} rows)", r.checked_rows);
    if (r.quantize_us > 0) out += fmt::format("  (quantise A, B: {:.2f} us)", r.quantize_us);
    if (!r.baseline_unavailable.empty() && r.baseline_unavailable != r.ours_unavailable)
      out += fmt::format("  (no cuBLASLt baseline: {})", r.baseline_unavailable);
    if (!r.baseline_fp8_per_tensor_unavailable.empty())
      out += fmt::format("  (no per-tensor baseline: {})", r.baseline_fp8_per_tensor_unavailable);
    out += '\n';
  }
  return out;
}

std::string format_summary(const std::vector<BenchRow>& rows, bool baseline) {
  std::string out;
  const std::size_t total = rows.size();
  const std::size_t without = rows_without_baseline(rows);
  const std::size_t not_served = rows_not_served(rows);
  const std::size_t failed = failed_rows(rows);
  if (baseline) {
    std::size_t counted = 0;
    for (const BenchRow& r : rows) counted += r.baseline && r.failure.empty() ? 1 : 0;
    out += fmt::format("geomean ratio (cuBLASLt time / ours; > 1: autogemm faster): {:.3f} over "
                       "{} row{} with a cuBLASLt baseline\n",
                       geomean_ratio(rows), counted, counted == 1 ? "" : "s");
    if (without > 0)
      out += fmt::format("{} of {} row{} had no cuBLASLt baseline (n/a); checked against the "
                         "float64 reference instead\n",
                         without, total, total == 1 ? "" : "s");
  }
  out += format_suite_summary(summarize_suite(rows));
  if (const EpilogueSummary e = summarize_epilogue(rows); e.rows > 0) {
    out += fmt::format("fused epilogue: unfused sequence / fused, geomean {:.3f} over {} row{}\n",
                       e.geomean_unfused_over_fused, e.rows, e.rows == 1 ? "" : "s");
    if (e.compute_bound_rows > 0)
      out += fmt::format("fused epilogue: largest cost over the plain GEMM at M >= {}: {:+.1f}% "
                         "({}) over {} row{}\n",
                         kEpilogueComputeBoundMinM, 100 * e.max_compute_bound_overhead,
                         e.max_overhead_shape, e.compute_bound_rows,
                         e.compute_bound_rows == 1 ? "" : "s");
  }
  if (not_served > 0) {
    out += fmt::format("{} of {} row{} not served (n/a): gemm() runs {} through cuBLASLt, which "
                       "declined {}:",
                       not_served, total, total == 1 ? "" : "s",
                       not_served == 1 ? "it" : "them", not_served == 1 ? "it" : "them");
    for (const BenchRow& r : rows)
      if (!r.ours_unavailable.empty()) out += fmt::format(" {}", shape_text(r.problem));
    out += "\n";
  }
  if (failed > 0) {
    out += fmt::format("{} of {} row{} FAILED:", failed, total, total == 1 ? "" : "s");
    for (const BenchRow& r : rows)
      if (!r.failure.empty()) out += fmt::format(" {}", shape_text(r.problem));
    out += "\n";
  }
  return out;
}

std::string format_plan_table(const std::vector<PlanRow>& rows) {
  std::size_t config_width = 6;
  for (const PlanRow& r : rows) config_width = std::max(config_width, r.config.size());
  std::string out = fmt::format("{:>6} {:>6} {:>6} {:<8} {:<{}} {:>13} {:>15}  {}\n", "m", "n",
                                "k", "tag", "config", config_width, "predicted_us",
                                "predicted TFLOP/s", "path");
  for (const PlanRow& r : rows)
    out += fmt::format("{:>6} {:>6} {:>6} {:<8} {:<{}} {:>13.2f} {:>15.1f}  {}\n", r.problem.m,
                       r.problem.n, r.problem.k, r.tag, r.config, config_width,
                       r.predicted_us, r.predicted_tflops, r.path_reason);
  return out;
}

std::string progress_text(std::size_t done, std::size_t total, const BenchItem* current,
                          int width) {
  const std::size_t filled = total == 0 ? std::size_t(width) : done * std::size_t(width) / total;
  std::string bar(filled, '=');
  if (filled < std::size_t(width)) bar += '>';
  bar.resize(std::size_t(width), ' ');
  std::string text = fmt::format("[{}] {}/{}", bar, done, total);
  if (current) text += fmt::format(" {}", shape_text(current->problem));
  return text;
}

std::string csv_quoted(const std::string& field) { return quoted(field); }

nlohmann::json timing_json(const TimingStats& stats) { return stats_json(stats); }

}  // namespace autogemm::bench
