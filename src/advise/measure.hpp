#pragma once
// `autogemm advise --measure`: the advisor's predicted GEMM time of one step (a decode step, or
// a prefill) against the same GEMMs run through autogemm::gemm() on this machine's GPU.
//
// The prediction is the advisor's own: each GEMM's predict_step_gemm() (the planner's predicted
// time of its planned configuration), times its count per step, summed; that sum is the GEMM
// part of FormatAssessment::decode_gemm_us / prefill_gemm_us (the attention estimate is not a
// GEMM and is not compared). The measurement runs each distinct GEMM of the step once per
// format through gemm() with the planned configuration (GemmOptions::config: the planner's
// own spec, so autotuning cannot swap it) on random inputs (FP8: random BF16 quantised by
// quantize.hpp, 1x128 / 128x128 scales), checks its output once against the float64
// reference (DeepGEMM's diff: < 1e-5 for BF16; FP8 against the GEMM of the unquantised BF16
// inputs, < 1e-3), then times it with CUDA events, warm-up first, the L2 flushed before every
// timed call, median (bench/timing.hpp). FP8 times the GEMM alone, not the activations'
// quantisation (the advisor predicts the GEMM alone).
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "advise/advisor.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"
#include "bench/timing.hpp"

namespace autogemm::advise {

// Row counts above this are checked on their first kCheckedRows rows only (the float64
// reference is one thread per output: a whole prefill GEMM would take it minutes).
inline constexpr int64_t kCheckedRows = 512;
inline constexpr double kBf16DiffLimit = 1e-5;   // DeepGEMM's diff, against the same inputs
inline constexpr double kFp8DiffLimit = 1e-3;    // against the unquantised BF16 inputs

struct MeasureOptions {
  int device = 0;          // CUDA ordinal
  int warmup = 5;
  int iters = 30;          // timed calls per GEMM; the median is reported
  uint64_t seed = 2026;
};

struct MeasuredGemm {
  StepGemm gemm;                 // as in the advisor's step list: what, m, n, k, count
  PredictedGemm predicted;       // the advisor's: problem run, planned config, time per call
  // Filled by measure_step:
  bool measured = false;
  std::string config_ran;        // GemmReport::config.describe() of the checked call
  bool used_vendor = false;
  bench::TimingStats time;       // per call
  double diff = 0;               // DeepGEMM's diff against the reference
  double diff_limit = 0;
  std::string checked_against;   // what the reference multiplied
  int64_t checked_rows = 0;
  int64_t unwritten = 0;         // non-finite entries of D in the checked rows
  std::string failure;           // empty when the output and the configuration are right
  // Measured median over predicted (> 1: slower than predicted); 0 before measuring.
  double ratio() const;
};

struct StepMeasurement {
  std::string phase;             // "decode" or "prefill"
  int64_t tokens = 0;            // rows of the step's GEMMs (batch, or batch x context)
  Format format = Format::bf16;
  std::string not_measured;      // why not, when this format is not run ("" when it is)
  std::vector<MeasuredGemm> gemms;   // the step's GEMMs, in the advisor's order
  double advisor_gemm_us = 0;    // the advisor's figure (FormatAssessment::*_gemm_us)
  double predicted_us = 0;       // sum of count x predicted.time_us (== advisor_gemm_us)
  double measured_us = 0;        // sum of count x measured median; 0 before measuring
  double error_pct() const;      // (predicted - measured) / measured x 100; NaN before
  bool passed() const;           // every GEMM measured and without a failure
};

// The formats --measure can run: where autogemm has a kernel of its own and the quantiser makes
// the scales (BF16, block-scaled FP8).
bool measurable(Format format);

// No GPU involved: the step's GEMMs in one format with the advisor's predictions, to be measured
// (`not_measured` empty) or not (then it says why: not available on the device, no kernel of
// autogemm's, or a format --measure does not run). `assessment` is the advisor's for the format.
StepMeasurement plan_step_measurement(const std::string& phase, int64_t tokens,
                                      const std::vector<StepGemm>& gemms,
                                      const FormatAssessment& assessment, const GpuInfo& device);

// Runs and times every distinct GEMM of `step` (which must be measurable) on options.device,
// filling the measured fields and the totals. A wrong output does not throw: the GEMM's
// `failure` says what was wrong, and passed() is false. `progress(i, total, gemm)` is called
// before each distinct GEMM.
void measure_step(StepMeasurement& step, const MeasureOptions& options,
                  const std::function<void(std::size_t, std::size_t, const MeasuredGemm&)>&
                      progress = {});

}  // namespace autogemm::advise
