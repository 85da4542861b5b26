#pragma once
// Fitting the cost model's rates (autogemm/device.hpp CostCalibration) to measurements: the
// timed configurations of `autogemm tune --sweep --sweep-csv`, each row's sample of the legal
// set. The fit is relative to the model as written (every rate 1), so it says how far each term
// is off on this device; `autogemm fit-cost` runs it and writes data/cost-model/<preset>.json.
#include <string>
#include <vector>

#include "autogemm/config.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::plan {

// One timed configuration of a sweep row.
struct SweepSample {
  GemmProblem problem;
  GemmConfig config;
  double measured_us = 0;
  std::string row;   // "m x n x k tag": the samples of one row are compared with each other
};

// The CSV `tune --sweep-csv` writes (header m,n,k,tag,rank,config,measured_us,..., dtype,
// layout, d_type); rows that failed (measured_us 0) are left out. Throws InvalidArgument naming
// `source`, the line and the field.
std::vector<SweepSample> parse_sweep_csv(const std::string& text, const std::string& source);

struct FitQuality {
  int samples = 0, rows = 0;
  double mean_log_error = 0;   // mean |ln(predicted / measured)|, what the fit minimises
  double median_error = 0;     // of |predicted - measured| / measured
  double p90_error = 0;
  // Rows whose predicted-fastest sampled configuration is within 5% of the measured fastest
  // (the planner's pick, when the sample holds it, is what a row's user gets).
  int rows_picked_within_5pct = 0;
};
FitQuality fit_quality(const std::vector<SweepSample>& samples, const GpuInfo& device);

// The model's error on the samples whose prediction one term bounds (the largest of its compute,
// DRAM, L2, store and fixed parts): which term is off, and which way. On the H200 sweeps of
// 2026-11-30 the model as written was fast where compute, L2 or fixed costs bound (measured
// x1.09-1.31 of predicted) and 41-50% off where the store does (x0.90 fitted, x1.91 held out).
// The store term is split by the kernel's store path ("store (tma)", "store (staged)": rows
// TMA cannot store, "store (threads)"): the staged rows were the x2.0, TMA's x0.70-0.84.
struct TermError {
  const char* term = "";
  int samples = 0;
  double median_ratio = 1;   // of measured / predicted: > 1, the model is fast
  double median_error = 0;   // of |predicted - measured| / measured
};
std::vector<TermError> error_by_bounding_term(const std::vector<SweepSample>& samples,
                                              const GpuInfo& device);

struct FitResult {
  CostCalibration calibration;
  FitQuality before, after;                   // on the fitted samples
  FitQuality holdout_before, holdout_after;   // on the held-out ones (rows 0 when none)
};
// Coordinate descent on the rates within hw::kMinCostRate .. kMaxCostRate, from `device` with
// every rate 1. Throws InvalidArgument when `fit` is empty.
FitResult fit_calibration(const std::vector<SweepSample>& fit,
                          const std::vector<SweepSample>& holdout, GpuInfo device);

// Whether a fit is worth keeping as data/cost-model/<preset>.json: the planner's picks (within
// 5% of the best timed) must get better on the held-out rows (the fitted ones when none are held
// out) and get no worse on the fitted ones. Smaller errors alone do not count: the H200 fit of
// 2026-11-30 cut the held-out median error 20.6% -> 17.5% with picks 55 -> 54 of 59 fitted and
// 58 -> 58 of 63 held out, and moved 16384^3 to a prediction 23-46% over its measured times.
// Empty when worth keeping, else why not.
std::string calibration_not_worth_keeping(const FitResult& r);

}  // namespace autogemm::plan
