#include "plan/calibration_fit.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <iterator>
#include <map>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "hw/cost_calibration.hpp"
#include "plan/rules.hpp"
#include "plan/swap_ab.hpp"

namespace autogemm::plan {

namespace {

// Splits one CSV line; fields may be quoted ("..."), quotes inside are not used by the sweep.
std::vector<std::string> csv_fields(const std::string& line) {
  std::vector<std::string> out(1);
  bool quoted = false;
  for (char c : line) {
    if (c == '"') quoted = !quoted;
    else if (c == ',' && !quoted) out.emplace_back();
    else out.back() += c;
  }
  return out;
}

double predicted_us(const SweepSample& s, const GpuInfo& device) {
  return predict(s.problem, s.config, device).time_us;
}

double quantile(std::vector<double> v, double q) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  return v[std::min(v.size() - 1, static_cast<std::size_t>(q * double(v.size())))];
}

// The rates the fit moves, by name.
double& rate(CostCalibration& c, int i) {
  switch (i) {
    case 0: return c.mma;
    case 1: return c.l2;
    case 2: return c.dram;
    default: return c.fixed;
  }
}
constexpr int kRates = 4;

}  // namespace

std::vector<SweepSample> parse_sweep_csv(const std::string& text, const std::string& source) {
  std::istringstream in(text);
  std::string line;
  std::map<std::string, std::size_t> column;
  std::vector<SweepSample> out;
  int line_number = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.empty() || line[0] == '#') continue;
    const std::vector<std::string> f = csv_fields(line);
    if (column.empty()) {
      for (std::size_t i = 0; i < f.size(); ++i) column[f[i]] = i;
      for (const char* need : {"m", "n", "k", "tag", "config", "measured_us", "dtype", "layout",
                               "d_type"})
        if (!column.count(need))
          throw InvalidArgument(source, fmt::format("header \"{}\"", line),
                                fmt::format("has no column {} (written by autogemm tune --sweep "
                                            "--sweep-csv)",
                                            need));
      continue;
    }
    const auto field = [&](const char* name) -> const std::string& {
      const std::size_t i = column.at(name);
      if (i >= f.size())
        throw InvalidArgument(fmt::format("{}:{}", source, line_number), line,
                              fmt::format("has no field {}", name));
      return f[i];
    };
    const auto number = [&](const char* name) {
      try {
        return std::stod(field(name));
      } catch (const std::exception&) {
        throw InvalidArgument(fmt::format("{}:{}: {}", source, line_number, name), field(name),
                              "must be a number");
      }
    };
    SweepSample s;
    s.measured_us = number("measured_us");
    if (!(s.measured_us > 0)) continue;   // a configuration that failed
    GemmProblem& p = s.problem;
    p.m = int64_t(number("m"));
    p.n = int64_t(number("n"));
    p.k = int64_t(number("k"));
    const std::optional<DType> in_type = parse_dtype(field("dtype"));
    const std::optional<DType> d_type = parse_dtype(field("d_type"));
    const std::optional<Layout> layout = parse_layout(field("layout"));
    if (!in_type || !d_type || !layout)
      throw InvalidArgument(fmt::format("{}:{}", source, line_number), line,
                            "dtype, d_type or layout is not one autogemm knows");
    p.a_type = p.b_type = *in_type;
    p.d_type = *d_type;
    p.layout = *layout;
    if (*in_type == DType::e4m3) p.scaling = Scaling::block_1x128_128x128;
    validate(p);
    s.config = GemmConfig::parse(field("config"));
    s.row = fmt::format("{} x {} x {} {}", p.m, p.n, p.k, field("tag"));
    out.push_back(std::move(s));
  }
  return out;
}

FitQuality fit_quality(const std::vector<SweepSample>& samples, const GpuInfo& device) {
  FitQuality q;
  q.samples = int(samples.size());
  std::vector<double> errors;
  // Per row: the measured fastest, and the measured time of the predicted fastest.
  std::map<std::string, std::pair<double, std::pair<double, double>>> rows;
  double log_sum = 0;
  for (const SweepSample& s : samples) {
    const double predicted = predicted_us(s, device);
    errors.push_back(std::abs(predicted - s.measured_us) / s.measured_us);
    log_sum += std::abs(std::log(predicted / s.measured_us));
    auto [it, fresh] = rows.try_emplace(s.row, s.measured_us, std::pair{predicted, s.measured_us});
    if (!fresh) {
      it->second.first = std::min(it->second.first, s.measured_us);
      if (predicted < it->second.second.first) it->second.second = {predicted, s.measured_us};
    }
  }
  q.rows = int(rows.size());
  q.mean_log_error = samples.empty() ? 0 : log_sum / double(samples.size());
  q.median_error = quantile(errors, 0.5);
  q.p90_error = quantile(errors, 0.9);
  for (const auto& [row, r] : rows)
    if (r.second.second <= 1.05 * r.first) ++q.rows_picked_within_5pct;
  return q;
}

std::vector<TermError> error_by_bounding_term(const std::vector<SweepSample>& samples,
                                              const GpuInfo& device) {
  // The store term by the kernel's store path (StorePath: threads, tma, staged), which move D
  // at different rates: on the H200 sweeps of 2026-11-30 the staged rows were x2.0 and the TMA
  // ones x0.70-0.84 where the store bounded.
  constexpr const char* kTerms[] = {"compute",         "DRAM",        "L2",
                                    "store (threads)", "store (tma)", "store (staged)",
                                    "fixed"};
  constexpr std::size_t kStore = 3, kFixed = 6;
  static_assert(int(StorePath::threads) == 0 && int(StorePath::tma) == 1 &&
                    int(StorePath::staged) == 2,
                "the store labels follow StorePath's order");
  std::vector<double> ratios[std::size(kTerms)], errors[std::size(kTerms)];
  for (const SweepSample& s : samples) {
    const Prediction p = predict(s.problem, s.config, device);
    const double parts[] = {p.compute_us, p.memory_us, p.l2_us, p.store_us, p.fixed_us};
    std::size_t term = std::max_element(std::begin(parts), std::end(parts)) - parts;
    if (term == kStore) {
      const GemmProblem kernel = kernel_problem(s.problem, s.config);
      term += std::size_t(kernel_fields(kernel, s.config).store_path);
    } else if (term > kStore) {
      term = kFixed;
    }
    ratios[term].push_back(s.measured_us / p.time_us);
    errors[term].push_back(std::abs(p.time_us - s.measured_us) / s.measured_us);
  }
  std::vector<TermError> out;
  for (std::size_t t = 0; t < std::size(kTerms); ++t)
    if (!ratios[t].empty())
      out.push_back({kTerms[t], int(ratios[t].size()), quantile(ratios[t], 0.5),
                     quantile(errors[t], 0.5)});
  return out;
}

FitResult fit_calibration(const std::vector<SweepSample>& fit,
                          const std::vector<SweepSample>& holdout, GpuInfo device) {
  if (fit.empty())
    throw InvalidArgument("sweep", "no timed configurations",
                          "fitting needs the timings of autogemm tune --sweep --sweep-csv");
  device.cost = CostCalibration{};
  FitResult r;
  r.before = fit_quality(fit, device);
  if (!holdout.empty()) r.holdout_before = fit_quality(holdout, device);
  const auto objective = [&](const CostCalibration& c) {
    GpuInfo d = device;
    d.cost = c;
    return fit_quality(fit, d).mean_log_error;
  };
  CostCalibration best;
  double best_value = objective(best);
  // Multiplicative steps from 2^0.5 down to 2^(1/64): each rate in turn moves while it helps.
  for (double step = std::sqrt(2.0); step > 1.0 + 1e-3; step = std::sqrt(step)) {
    for (bool moved = true; moved;) {
      moved = false;
      for (int i = 0; i < kRates; ++i)
        for (double factor : {step, 1.0 / step}) {
          CostCalibration trial = best;
          double& v = rate(trial, i);
          v = std::clamp(v * factor, hw::kMinCostRate, hw::kMaxCostRate);
          const double value = objective(trial);
          if (value < best_value - 1e-9) {
            best = trial;
            best_value = value;
            moved = true;
          }
        }
    }
  }
  r.calibration = best;
  device.cost = best;
  r.after = fit_quality(fit, device);
  if (!holdout.empty()) r.holdout_after = fit_quality(holdout, device);
  return r;
}

std::string calibration_not_worth_keeping(const FitResult& r) {
  const bool held_out = r.holdout_before.rows > 0;
  const FitQuality& judged_before = held_out ? r.holdout_before : r.before;
  const FitQuality& judged_after = held_out ? r.holdout_after : r.after;
  if (r.after.rows_picked_within_5pct < r.before.rows_picked_within_5pct)
    return fmt::format("the fitted rows' picks within 5% of the best fall from {} to {} of {}",
                       r.before.rows_picked_within_5pct, r.after.rows_picked_within_5pct,
                       r.after.rows);
  if (judged_after.rows_picked_within_5pct <= judged_before.rows_picked_within_5pct)
    return fmt::format("the {} rows' picks within 5% of the best do not improve ({} -> {} of {})",
                       held_out ? "held-out" : "fitted", judged_before.rows_picked_within_5pct,
                       judged_after.rows_picked_within_5pct, judged_after.rows);
  return {};
}

}  // namespace autogemm::plan
