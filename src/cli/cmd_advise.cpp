// `autogemm advise --model FILE|NAME --device 0|PRESET [--gpus N] [--batch B] [--context T]
// [--prefer speed|quality|memory] [--kv bf16|fp8] [--json]`: which weight format to deploy a
// model in on this device, with every format's bytes, fit and predicted step times, from the
// planner's predictions of the model's GEMMs (src/advise/advisor.hpp).
// `--measure [--formats bf16,fp8-block,int8,int4,mxfp4] [--prefill] [--warmup N] [--iters N]
// [--seed S]`: on a GPU, the predicted GEMM time of one decode step (and with --prefill, of the
// prefill) against the same GEMMs run through gemm(), GEMM by GEMM (src/advise/measure.hpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cmath>
#include <cstring>
#include <fstream>
#include <sstream>

#include "advise/advisor.hpp"
#include "advise/measure.hpp"
#include "autogemm/errors.hpp"
#include "bench/progress.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"
#include "cli/multi_gpu_cli.hpp"

namespace autogemm::cli {

namespace {

struct AdviseCliOptions {
  std::string model;
  std::string device;
  int gpus = 1;
  int64_t batch = 1;
  int64_t context = 4096;
  std::string prefer = "speed";
  std::string kv = "bf16";
  bool json = false;
  // --measure
  bool measure = false;
  std::string formats = "bf16,fp8-block,int8,int4,mxfp4";
  bool prefill = false;
  int warmup = 5;
  int iters = 30;
  uint64_t seed = 2026;
  std::string json_out;   // --json-out FILE: the JSON also into FILE
};

nlohmann::json advice_json(const advise::Advice& a) {
  nlohmann::json formats = nlohmann::json::array();
  for (const auto& s : a.formats)
    formats.push_back({{"format", to_string(s.format)},
                       {"bits_per_weight", s.bits_per_weight},
                       {"available", s.available},
                       {"autogemm_kernel", s.ours},
                       {"weight_bytes", s.weight_bytes},
                       {"kv_cache_bytes", s.kv_bytes},
                       {"activation_bytes", s.activation_bytes},
                       {"bytes_per_gpu", s.total_bytes},
                       {"usable_bytes_per_gpu", s.capacity_bytes},
                       {"fits", s.fits},
                       {"decode_step_us", s.decode_us},
                       {"decode_gemm_us", s.decode_gemm_us},
                       {"prefill_us", s.prefill_us},
                       {"prefill_gemm_us", s.prefill_gemm_us},
                       {"time_basis", s.time_basis},
                       {"verdict", s.verdict}});
  nlohmann::json gemms = nlohmann::json::array();
  for (const auto& g : a.decode_gemms)
    gemms.push_back({{"what", g.what}, {"m", g.m}, {"n", g.n}, {"k", g.k}, {"count", g.count}});
  return {{"model", a.model.name},
          {"source", a.model.source},
          {"parameters", advise::parameter_count(a.model)},
          {"device", a.device.preset.empty() ? a.device.name : a.device.preset},
          {"gpus", a.options.gpus},
          {"batch", a.options.batch},
          {"context", a.options.context},
          {"prefer", to_string(a.options.prefer)},
          {"recommendation", a.recommendation},
          {"formats", formats},
          {"decode_gemms", gemms}};
}

void print_advice(const advise::Advice& a) {
  fmt::print("model      {} ({:.2f}B parameters; {})\n", a.model.name,
             advise::parameter_count(a.model) / 1e9, a.model.source);
  fmt::print("device     {} x {}, {:.0f} GB each; batch {}, context {}\n", a.options.gpus,
             a.device.preset.empty() ? a.device.name : a.device.preset,
             a.device.memory_total_bytes / 1e9, a.options.batch, a.options.context);
  fmt::print("recommend  {}\n\n", a.recommendation);
  fmt::print("{:<17} {:>6} {:>10} {:>9} {:>10} {:>5} {:>11} {:>12}  {}\n", "format", "bits",
             "weights", "kv", "per GPU", "fits", "decode us", "prefill ms", "verdict");
  for (const auto& s : a.formats)
    fmt::print("{:<17} {:>6.2f} {:>8.1f}GB {:>7.1f}GB {:>8.1f}GB {:>5} {:>10.0f}{} {:>12.1f}  {}\n",
               to_string(s.format), s.bits_per_weight, s.weight_bytes / 1e9, s.kv_bytes / 1e9,
               s.total_bytes / 1e9, s.fits ? "yes" : "no", s.decode_us, s.ours ? " " : "*",
               s.prefill_us / 1000, s.verdict);
  fmt::print("\n* no kernel of autogemm's for this format here: a roofline estimate. Times are one "
             "GPU's share with tensor parallelism, without its communication.\n");
  if (a.model.experts > 0)
    fmt::print("Experts are timed as one GEMM each, a launch per expert: grouped_gemm() runs a "
               "layer's experts in one launch (`autogemm plan --grouped`), which these times do "
               "not count on.\n");
}

advise::AdviseOptions advise_options(const AdviseCliOptions& o) {
  advise::AdviseOptions options;
  options.gpus = o.gpus;
  options.batch = o.batch;
  options.context = o.context;
  options.prefer = advise::parse_preference(o.prefer);
  if (o.kv != "bf16" && o.kv != "fp8") throw InvalidArgument("--kv", o.kv, "bf16 or fp8");
  options.fp8_kv_cache = o.kv == "fp8";
  return options;
}

// ---- --measure ---------------------------------------------------------------------------

// --formats: a comma-separated list of bf16, fp8-block (fp8 for short), int8-weight-only,
// int4-weight-only and mxfp4-weight-only (int8, int4, mxfp4).
std::vector<advise::Format> parse_formats(const std::string& text) {
  std::vector<advise::Format> out;
  std::stringstream list(text);
  std::string item;
  while (std::getline(list, item, ',')) {
    advise::Format f;
    if (item == "bf16") {
      f = advise::Format::bf16;
    } else if (item == "fp8-block" || item == "fp8") {
      f = advise::Format::fp8_block;
    } else if (item == "int8-weight-only" || item == "int8") {
      f = advise::Format::int8_weight;
    } else if (item == "int4-weight-only" || item == "int4") {
      f = advise::Format::int4_weight;
    } else if (item == "mxfp4-weight-only" || item == "mxfp4") {
      f = advise::Format::mxfp4_weight;
    } else {
      throw InvalidArgument("--formats", item,
                            "bf16, fp8-block (fp8), int8-weight-only (int8), int4-weight-only "
                            "(int4) or mxfp4-weight-only (mxfp4): the formats autogemm runs with "
                            "its own kernels and --measure times; a comma-separated list");
    }
    if (std::find(out.begin(), out.end(), f) == out.end()) out.push_back(f);
  }
  if (out.empty()) throw InvalidArgument("--formats", text, "name at least one format");
  return out;
}

bool is_ordinal(const std::string& spec) {
  return !spec.empty() && std::all_of(spec.begin(), spec.end(),
                                      [](unsigned char c) { return std::isdigit(c); });
}

// The GPU --measure runs on: the one gemm() plans for, so the advisor predicts with its figures.
GpuInfo measure_device(const std::string& spec) {
  if (!spec.empty() && !is_ordinal(spec))
    throw InvalidArgument("--device", spec,
                          "--measure runs the GEMMs on a GPU of this machine: give its index "
                          "(--device 0), not a preset");
  const GpuProfile profile = profile_gpus();
  if (profile.gpus.empty())
    throw NoDevice(fmt::format("autogemm advise --measure runs kernels: {} (without --measure, "
                               "advise predicts for a preset: --device h200)",
                               profile.unavailable_reason.empty() ? "no CUDA device found"
                                                                  : profile.unavailable_reason));
  return spec.empty() ? profile.gpus.front() : resolve_device(spec);
}

const advise::FormatAssessment& assessment(const advise::Advice& a, advise::Format f) {
  for (const auto& s : a.formats)
    if (s.format == f) return s;
  throw InvalidArgument("format", std::string(to_string(f)), "missing from the advice");
}


struct MeasureRun {
  advise::Advice advice;
  std::vector<advise::StepMeasurement> steps;
  bool passed = true;
};

MeasureRun run_measure(const AdviseCliOptions& o, const advise::ModelDescription& model,
                       const advise::AdviseOptions& options) {
  const std::vector<advise::Format> selected = parse_formats(o.formats);
  if (o.warmup < 0) throw InvalidArgument("--warmup", std::to_string(o.warmup), "must be >= 0");
  if (o.iters < 1) throw InvalidArgument("--iters", std::to_string(o.iters), "must be >= 1");
  const GpuInfo device = measure_device(o.device);
  MeasureRun run;
  run.advice = advise::advise(model, device, options);
  struct Phase {
    const char* name;
    int64_t tokens;
    std::vector<advise::StepGemm> gemms;
  };
  std::vector<Phase> phases = {{"decode", options.batch, run.advice.decode_gemms}};
  if (o.prefill)
    phases.push_back({"prefill", options.batch * options.context,
                      advise::step_gemms(model, options.batch * options.context, options.batch,
                                         options.gpus)});
  advise::MeasureOptions mo;
  mo.device = device.ordinal;
  mo.warmup = o.warmup;
  mo.iters = o.iters;
  mo.seed = o.seed;
  const bool show_progress = bench::stderr_is_terminal();
  for (const Phase& phase : phases)
    for (advise::Format f : advise::formats_by_quality()) {  // steps in a fixed order
      advise::StepMeasurement step = advise::plan_step_measurement(
          phase.name, phase.tokens, phase.gemms, assessment(run.advice, f), device);
      const bool wanted = std::find(selected.begin(), selected.end(), f) != selected.end();
      if (step.not_measured.empty() && !wanted) step.not_measured = "not selected (--formats)";
      if (step.not_measured.empty()) {
        advise::measure_step(step, mo, [&](std::size_t i, std::size_t n,
                                           const advise::MeasuredGemm& g) {
          if (show_progress)
            fmt::print(stderr, "measuring {} {} [{}/{}] {} {}x{}x{}\n", phase.name,
                       to_string(f), i + 1, n, g.gemm.what, g.predicted.problem.m,
                       g.predicted.problem.n, g.predicted.problem.k);
        });
        run.passed = run.passed && step.passed();
      }
      run.steps.push_back(std::move(step));
    }
  // A GPU where no selected format has a kernel of autogemm's (not sm_90a): say why, not "passed".
  if (std::none_of(run.steps.begin(), run.steps.end(),
                   [](const advise::StepMeasurement& s) { return s.not_measured.empty(); })) {
    std::string why;
    for (const auto& step : run.steps)
      if (step.phase == "decode" &&
          std::find(selected.begin(), selected.end(), step.format) != selected.end())
        why += fmt::format("{}{}: {}", why.empty() ? "" : "; ", to_string(step.format),
                           step.not_measured);
    throw NoDevice(fmt::format("autogemm advise --measure: nothing to run on {}: {}",
                               device.name, why));
  }
  return run;
}

double step_total_us(const advise::Advice& a, const advise::StepMeasurement& step) {
  const auto& s = assessment(a, step.format);
  return step.phase == "prefill" ? s.prefill_us : s.decode_us;
}

nlohmann::json finite_or_null(double v) {
  return std::isfinite(v) ? nlohmann::json(v) : nlohmann::json(nullptr);
}

nlohmann::json measure_json(const AdviseCliOptions& o, const MeasureRun& run) {
  const advise::Advice& a = run.advice;
  nlohmann::json steps = nlohmann::json::array();
  for (const auto& step : run.steps) {
    const bool measured = step.not_measured.empty();
    nlohmann::json gemms = nlohmann::json::array();
    for (const auto& g : step.gemms) {
      nlohmann::json j = {{"what", g.gemm.what},
                          {"m", g.gemm.m},
                          {"n", g.gemm.n},
                          {"k", g.gemm.k},
                          {"count", g.gemm.count},
                          {"config", g.predicted.config},
                          {"predicted_us", g.predicted.time_us}};
      if (measured) {
        j["problem"] = problem_json(g.predicted.problem);
        j["config_ran"] = g.config_ran;
        j["used_vendor"] = g.used_vendor;
        j["measured_us"] = g.time.median_us;
        j["measured_min_us"] = g.time.min_us;
        j["measured_max_us"] = g.time.max_us;
        j["samples"] = g.time.samples;
        j["ratio"] = g.ratio();
        j["diff"] = finite_or_null(g.diff);
        j["diff_limit"] = g.diff_limit;
        j["checked_against"] = g.checked_against;
        j["checked_rows"] = g.checked_rows;
        j["check"] = g.failure.empty() ? "ok" : g.failure;
      }
      gemms.push_back(std::move(j));
    }
    nlohmann::json j = {{"phase", step.phase},
                        {"tokens", step.tokens},
                        {"format", to_string(step.format)},
                        {"measured", measured},
                        {"advisor_step_us", step_total_us(a, step)},
                        {"advisor_gemm_us", step.advisor_gemm_us},
                        {"predicted_us", step.predicted_us},
                        {"gemms", gemms}};
    if (measured) {
      j["measured_us"] = step.measured_us;
      j["error_pct"] = finite_or_null(step.error_pct());
      j["passed"] = step.passed();
    } else {
      j["not_measured"] = step.not_measured;
    }
    steps.push_back(std::move(j));
  }
  return {{"model", a.model.name},
          {"device", a.device.name},
          {"gpu", a.device.ordinal},
          {"gpus", a.options.gpus},
          {"batch", a.options.batch},
          {"context", a.options.context},
          {"warmup", o.warmup},
          {"iters", o.iters},
          {"seed", o.seed},
          {"l2_flushed", true},
          {"predicted",
           "the advisor's GEMM part of the step: count x the planner's predicted time of the "
           "planned configuration, summed (the attention estimate is not a GEMM and is left "
           "out)"},
          {"measured",
           "gemm() on random inputs (FP8: random BF16 quantised with 1x128 / 128x128 scales), "
           "CUDA events, L2 flushed before each timed call, median per GEMM, times count"},
          {"error_pct", "(predicted - measured) / measured x 100"},
          {"steps", steps},
          {"passed", run.passed}};
}

void print_measure(const AdviseCliOptions& o, const MeasureRun& run) {
  const advise::Advice& a = run.advice;
  fmt::print("model      {} on {} (GPU {}); batch {}, context {}, {} GPU(s) (one GPU's share)\n",
             a.model.name, a.device.name, a.device.ordinal, a.options.batch, a.options.context,
             a.options.gpus);
  fmt::print("predicted  the advisor's GEMM time of the step: count x the planner's predicted "
             "time of the planned\n           configuration, summed (its attention estimate is "
             "not a GEMM and is left out)\n");
  fmt::print("measured   gemm() on random inputs, {} warm-up + {} timed calls per GEMM, CUDA "
             "events, L2 flushed\n           before each, median; x count. ratio = measured / "
             "predicted; error = (predicted - measured) / measured\n",
             o.warmup, o.iters);
  for (const auto& step : run.steps) {
    if (!step.not_measured.empty()) continue;
    fmt::print("\n{} ({} tokens), {}\n", step.phase == "decode" ? "decode step" : "prefill",
               step.tokens, to_string(step.format));
    fmt::print("{:<22} {:>6} {:>6} {:>6} {:>6}  {:<40} {:>9} {:>9} {:>6}  {}\n", "what", "M", "N",
               "K", "count", "config", "pred us", "meas us", "ratio", "check");
    for (const auto& g : step.gemms) {
      std::string check =
          g.failure.empty() ? fmt::format("ok, diff {:.1e} < {:g}", g.diff, g.diff_limit)
                            : "FAILED: " + g.failure;
      if (g.checked_rows < g.predicted.problem.m)
        check += fmt::format(" (first {} rows)", g.checked_rows);
      fmt::print("{:<22} {:>6} {:>6} {:>6} {:>6}  {:<40} {:>9.2f} {:>9.2f} {:>6.3f}  {}\n",
                 g.gemm.what, g.predicted.problem.m, g.predicted.problem.n,
                 g.predicted.problem.k, g.gemm.count, g.config_ran, g.predicted.time_us,
                 g.time.median_us, g.ratio(), check);
    }
    fmt::print("{:<22} {:>6} {:>6} {:>6} {:>6}  {:<40} {:>9.1f} {:>9.1f} {:>6.3f}  error {:+.1f}%\n",
               "step total", "", "", "", "", "", step.predicted_us, step.measured_us,
               step.measured_us / step.predicted_us, step.error_pct());
  }
  fmt::print("\n");
  for (const auto& step : run.steps)
    if (!step.not_measured.empty())
      fmt::print("{} {}: not measured: {}\n", step.phase, to_string(step.format),
                 step.not_measured);
  for (const auto& step : run.steps)
    if (step.not_measured.empty())
      fmt::print("summary: {} {} {} batch {}{}: predicted {:.1f} us, measured {:.1f} us, error "
                 "{:+.1f}% ({}){}\n",
                 a.model.name, step.phase, to_string(step.format), a.options.batch,
                 step.phase == "prefill" ? fmt::format(" context {}", a.options.context) : "",
                 step.predicted_us, step.measured_us, step.error_pct(),
                 std::abs(step.error_pct()) <= 15 ? "within 15%" : "NOT within 15%",
                 step.passed() ? "" : "; OUTPUT CHECK FAILED");
}

void run_advise(const AdviseCliOptions& o) {
  const advise::ModelDescription model = advise::load_model(o.model);
  const advise::AdviseOptions options = advise_options(o);
  if (o.measure) {
    // The file is opened before anything runs, so a path that cannot be written costs nothing.
    std::ofstream json_file;
    if (!o.json_out.empty()) {
      json_file.open(o.json_out, std::ios::binary | std::ios::trunc);
      if (!json_file)
        throw InvalidArgument("--json-out", o.json_out,
                              fmt::format("cannot be written: {}", std::strerror(errno)));
    }
    const MeasureRun run = run_measure(o, model, options);
    const std::string json = measure_json(o, run).dump(2);
    if (o.json)
      fmt::print("{}\n", json);
    else
      print_measure(o, run);
    if (json_file.is_open() && !(json_file << json << "\n").flush())
      throw InvalidArgument("--json-out", o.json_out, "could not be written completely");
    if (!run.passed) {
      for (const auto& step : run.steps)
        for (const auto& g : step.gemms)
          if (step.not_measured.empty() && !g.failure.empty())
            fmt::print(stderr, "autogemm: error: {} {} {} {}x{}x{}: {}\n", step.phase,
                       to_string(step.format), g.gemm.what, g.predicted.problem.m,
                       g.predicted.problem.n, g.predicted.problem.k, g.failure);
      throw CLI::RuntimeError(1);
    }
    return;
  }
  const GpuInfo device = resolve_cli_device(o.device);
  const advise::Advice advice = advise::advise(model, device, options);
  if (o.json)
    fmt::print("{}\n", advice_json(advice).dump(2));
  else
    print_advice(advice);
}

}  // namespace

void add_advise_command(CLI::App& app) {
  auto o = std::make_shared<AdviseCliOptions>();
  auto* cmd = app.add_subcommand(
      "advise", "Which weight format to deploy a model in: bytes, fit and predicted decode and "
                "prefill times of every format, from autogemm's own planner");
  std::string names;
  for (const auto& n : advise::model_names()) names += (names.empty() ? "" : ", ") + n;
  cmd->add_option("--model", o->model, "a shipped model (" + names + ") or a JSON file")
      ->required();
  cmd->add_option("--device", o->device, "GPU index or preset; default: GPU 0, else h100-sxm")
      ->check(device_name_check());
  cmd->add_option("--gpus", o->gpus, "GPUs, tensor parallel")->capture_default_str();
  cmd->add_option("--batch", o->batch, "sequences decoded together")->capture_default_str();
  cmd->add_option("--context", o->context, "tokens per sequence (KV cache, prefill)")
      ->capture_default_str();
  cmd->add_option("--prefer", o->prefer, "speed, quality or memory")->capture_default_str();
  cmd->add_option("--kv", o->kv, "KV cache type: bf16 or fp8")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  auto* measure = cmd->add_flag(
      "--measure", o->measure,
      "on a GPU: run the decode step's GEMMs through autogemm (random inputs, each checked once "
      "against a float64 reference) and print predicted against measured time, GEMM by GEMM and "
      "for the step");
  cmd->add_option("--formats", o->formats,
                  "with --measure: which formats to run (bf16, fp8-block, int8, int4, mxfp4; "
                  "comma-separated)")
      ->capture_default_str()
      ->needs(measure);
  cmd->add_flag("--prefill", o->prefill,
                "with --measure: also the prefill of --context tokens per sequence (slower)")
      ->needs(measure);
  cmd->add_option("--warmup", o->warmup, "with --measure: untimed calls per GEMM")
      ->capture_default_str()
      ->needs(measure);
  cmd->add_option("--iters", o->iters, "with --measure: timed calls per GEMM (median)")
      ->capture_default_str()
      ->needs(measure);
  cmd->add_option("--seed", o->seed, "with --measure: random input seed")
      ->check(seed_check())
      ->capture_default_str()
      ->needs(measure);
  cmd->add_option("--json-out", o->json_out,
                  "with --measure: also write the JSON into this file (the table still prints)")
      ->needs(measure);
  cmd->callback([o, cmd] {
    check_gpus_option(*cmd);
    run_advise(*o);
  });
}

}  // namespace autogemm::cli
