// `autogemm advise --measure` (src/advise/measure.hpp): the step's GEMM list by hand for
// Llama-3-8B, the prediction it compares being the advisor's own GEMM sum, the formats it runs
// and refuses, the command's refusals without a GPU, and (on a Hopper GPU) a small model's
// decode step and prefill measured end to end.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "advise/advisor.hpp"
#include "advise/measure.hpp"
#include "advise/model.hpp"
#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "cli_test_util.hpp"
#include "gpu_test_util.hpp"

using namespace autogemm;
using namespace autogemm::advise;

namespace {

const FormatAssessment& find(const Advice& a, Format f) {
  for (const auto& s : a.formats)
    if (s.format == f) return s;
  throw std::runtime_error("format missing");
}

void expect_gemm(const StepGemm& g, const char* what, int64_t m, int64_t n, int64_t k,
                 int64_t count) {
  EXPECT_EQ(g.what, what);
  EXPECT_EQ(g.m, m) << what;
  EXPECT_EQ(g.n, n) << what;
  EXPECT_EQ(g.k, k) << what;
  EXPECT_EQ(g.count, count) << what;
}

// The JSON object in a command's output (stdout and stderr come together).
nlohmann::json json_in(const std::string& out) {
  const auto begin = out.find('{'), end = out.rfind('}');
  if (begin == std::string::npos || end == std::string::npos || end < begin) return {};
  return nlohmann::json::parse(out.substr(begin, end - begin + 1), nullptr, false);
}

}  // namespace

// Llama-3-8B (32 layers, hidden 4096, 32 query and 8 KV heads of 128, intermediate 14336,
// vocab 128256), one decode step of B sequences: per layer one fused QKV projection
// (32 + 2 x 8) x 128 = 6144 columns, the output projection 4096 x 4096, the fused gate+up
// 2 x 14336 = 28672 columns, the down projection K = 14336; each 32 times; the LM head once.
TEST(AdviseMeasure, Llama3_8bDecodeStepGemmsByHand) {
  const ModelDescription m = load_model("llama-3-8b");
  for (int64_t batch : {1, 32}) {
    const auto gemms = step_gemms(m, batch, batch, 1);
    ASSERT_EQ(gemms.size(), 5u) << batch;
    expect_gemm(gemms[0], "attention qkv", batch, 6144, 4096, 32);
    expect_gemm(gemms[1], "attention out", batch, 4096, 4096, 32);
    expect_gemm(gemms[2], "mlp gate+up", batch, 28672, 4096, 32);
    expect_gemm(gemms[3], "mlp down", batch, 4096, 14336, 32);
    expect_gemm(gemms[4], "lm head", batch, 128256, 4096, 1);
    // 129 calls; their weights are the model's GEMM parameters: 32 x (6144 + 4096 + 28672) x
    // 4096 + 32 x 4096 x 14336 + 128256 x 4096 = 7,504,658,432 (the published 8,030,261,248
    // less the 525,336,576 embedding and the 266,240 norm weights).
    int64_t calls = 0, weights = 0;
    for (const auto& g : gemms) {
      calls += g.count;
      weights += g.count * g.n * g.k;
    }
    EXPECT_EQ(calls, 129);
    EXPECT_EQ(weights, 7504658432);
  }
  // Two-way tensor parallel halves every N; the rows and counts stay.
  const auto split = step_gemms(m, 32, 32, 2);
  expect_gemm(split[0], "attention qkv", 32, 3072, 4096, 32);
  expect_gemm(split[4], "lm head", 32, 64128, 4096, 1);
  // The prefill of 4096 tokens: every GEMM 4096 rows but the LM head (the last token only).
  const auto prefill = step_gemms(m, 4096, 1, 1);
  expect_gemm(prefill[2], "mlp gate+up", 4096, 28672, 4096, 32);
  expect_gemm(prefill[4], "lm head", 1, 128256, 4096, 1);
}

// The predicted total --measure compares is the advisor's own GEMM sum, GEMM by GEMM the
// planner's best configuration and its predicted time for the problem that will run.
TEST(AdviseMeasure, PredictionIsTheAdvisorsGemmSum) {
  const ModelDescription m = load_model("llama-3-8b");
  const GpuInfo h200 = device_preset("h200");
  for (int64_t batch : {1, 32}) {
    AdviseOptions o;
    o.batch = batch;
    o.context = 512;
    const Advice a = advise::advise(m, h200, o);
    for (Format f : {Format::bf16, Format::fp8_block}) {
      const FormatAssessment& s = find(a, f);
      const StepMeasurement step = plan_step_measurement("decode", batch, a.decode_gemms, s, h200);
      EXPECT_TRUE(step.not_measured.empty()) << step.not_measured;
      EXPECT_DOUBLE_EQ(step.predicted_us, s.decode_gemm_us);
      EXPECT_DOUBLE_EQ(step.advisor_gemm_us, s.decode_gemm_us);
      EXPECT_GT(s.decode_us, s.decode_gemm_us);   // plus the attention estimate
      EXPECT_TRUE(std::isnan(step.error_pct()));   // nothing measured yet
      EXPECT_FALSE(step.passed());
      ASSERT_EQ(step.gemms.size(), 5u);
      for (const MeasuredGemm& g : step.gemms) {
        const GemmProblem& p = g.predicted.problem;
        EXPECT_EQ(p.m, g.gemm.m);
        EXPECT_EQ(p.n, g.gemm.n);
        EXPECT_EQ(p.k, g.gemm.k);
        EXPECT_EQ(p.layout, Layout::nt);
        EXPECT_EQ(p.d_type, DType::bf16);
        EXPECT_EQ(p.a_type, f == Format::bf16 ? DType::bf16 : DType::e4m3);
        EXPECT_EQ(p.scaling,
                  f == Format::bf16 ? Scaling::none : Scaling::block_1x128_128x128);
        const Plan plan = plan_gemm(p, h200);
        EXPECT_EQ(g.predicted.config, plan.best().config.describe());
        EXPECT_DOUBLE_EQ(g.predicted.time_us, plan.best().prediction.time_us);
        EXPECT_GT(g.predicted.time_us, 0);
        EXPECT_FALSE(g.measured);
      }
      const StepMeasurement pre = plan_step_measurement(
          "prefill", batch * 512, step_gemms(m, batch * 512, batch, 1), s, h200);
      EXPECT_DOUBLE_EQ(pre.predicted_us, s.prefill_gemm_us);
    }
  }
}

TEST(AdviseMeasure, WhichFormatsAreMeasured) {
  const ModelDescription m = load_model("llama-3-8b");
  const Advice h200 = advise::advise(m, device_preset("h200"), AdviseOptions{});
  auto why = [&](const Advice& a, Format f) {
    return plan_step_measurement("decode", 1, a.decode_gemms, find(a, f), a.device).not_measured;
  };
  EXPECT_EQ(why(h200, Format::bf16), "");
  EXPECT_EQ(why(h200, Format::fp8_block), "");
  // The weight-only kernels are measured on weights packed by quantize_weight.
  EXPECT_EQ(why(h200, Format::int8_weight), "");
  EXPECT_EQ(why(h200, Format::int4_weight), "");
  EXPECT_EQ(why(h200, Format::mxfp4_weight), "");
  EXPECT_NE(why(h200, Format::nvfp4).find("not available"), std::string::npos);
  EXPECT_NE(why(h200, Format::fp8_tensor).find("weight-only int8, int4 and mxfp4"), std::string::npos);
  // No FP8 on an A100, and no kernel of ours off sm_90a.
  const Advice a100 = advise::advise(m, device_preset("a100-80g"), AdviseOptions{});
  EXPECT_NE(why(a100, Format::fp8_block).find("not available"), std::string::npos);
  EXPECT_NE(why(a100, Format::bf16).find("no kernel of our own"), std::string::npos);
  EXPECT_TRUE(measurable(Format::bf16));
  EXPECT_TRUE(measurable(Format::fp8_block));
  EXPECT_TRUE(measurable(Format::int4_weight));
  EXPECT_TRUE(measurable(Format::mxfp4_weight));
  EXPECT_FALSE(measurable(Format::fp8_tensor));
  // A step that is not measured is refused before any device is touched.
  StepMeasurement step = plan_step_measurement("decode", 1, h200.decode_gemms,
                                                find(h200, Format::fp8_tensor), h200.device);
  EXPECT_THROW(measure_step(step, MeasureOptions{}), InvalidArgument);
}

TEST(AdviseMeasureCli, RefusalsWithoutAGpuOrWithAPreset) {
  // A preset is never measured, GPU or not.
  auto run = autogemm::testing::run_cli("advise --model llama-3-8b --measure --device h200");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("not a preset"), std::string::npos) << run.out;
  // The --measure options need --measure; a format it does not run is named.
  run = autogemm::testing::run_cli("advise --model llama-3-8b --device h200 --prefill");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--measure"), std::string::npos) << run.out;
  run = autogemm::testing::run_cli("advise --model llama-3-8b --measure --formats nvfp4");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--formats = nvfp4"), std::string::npos) << run.out;
  if (!profile_gpus().gpus.empty()) GTEST_SKIP() << "a GPU is present: --measure would run";
  run = autogemm::testing::run_cli("advise --model llama-3-8b --measure");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("autogemm advise --measure runs kernels"), std::string::npos) << run.out;
  // Without --measure the same command predicts for a preset.
  run = autogemm::testing::run_cli("advise --model llama-3-8b --batch 32");
  EXPECT_EQ(run.exit_code, 0) << run.out;
}

// A small dense model (two layers), batch 4: its decode step and a 64-token prefill, in every
// format --measure runs by default (BF16, FP8, INT8, INT4, MXFP4), every GEMM checked and timed; the JSON carries each with a positive time and the step's
// finite error, and the sums add up.
TEST(AdviseMeasureGpu, SmallModelDecodeAndPrefill) {
  AUTOGEMM_REQUIRE_GPU();
  const auto path = std::filesystem::path(::testing::TempDir()) / "advise-measure-small.json";
  std::ofstream(path) << R"({"name": "small", "layers": 2, "hidden": 1024,
                             "intermediate": 2816, "heads": 8, "kv_heads": 2,
                             "head_dim": 128, "vocab": 8192})";
  const auto run = autogemm::testing::run_cli(
      "advise --model " + path.string() +
      " --batch 4 --context 16 --measure --prefill --warmup 1 --iters 5 --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  const nlohmann::json j = json_in(run.out);
  ASSERT_TRUE(j.is_object()) << run.out;
  EXPECT_TRUE(j["passed"].get<bool>());
  int measured_steps = 0;
  for (const auto& step : j["steps"]) {
    if (!step["measured"].get<bool>()) {
      EXPECT_FALSE(step["not_measured"].get<std::string>().empty());
      continue;
    }
    ++measured_steps;
    ASSERT_EQ(step["gemms"].size(), 5u) << step.dump();
    double predicted = 0, measured = 0;
    for (const auto& g : step["gemms"]) {
      EXPECT_GT(g["measured_us"].get<double>(), 0) << g.dump();
      EXPECT_GT(g["predicted_us"].get<double>(), 0) << g.dump();
      EXPECT_EQ(g["check"], "ok") << g.dump();
      EXPECT_EQ(g["config_ran"], g["config"]) << g.dump();
      predicted += g["count"].get<double>() * g["predicted_us"].get<double>();
      measured += g["count"].get<double>() * g["measured_us"].get<double>();
    }
    ASSERT_TRUE(step["error_pct"].is_number()) << step.dump();
    EXPECT_TRUE(std::isfinite(step["error_pct"].get<double>()));
    EXPECT_TRUE(step["passed"].get<bool>());
    EXPECT_NEAR(step["predicted_us"].get<double>(), predicted, 1e-6 * predicted);
    EXPECT_NEAR(step["measured_us"].get<double>(), measured, 1e-6 * measured);
    EXPECT_DOUBLE_EQ(step["predicted_us"].get<double>(), step["advisor_gemm_us"].get<double>());
  }
  EXPECT_EQ(measured_steps, 10);   // decode and prefill: bf16, fp8-block, int8, int4, mxfp4
}
