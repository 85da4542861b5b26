// The advisor (src/advise/): the shipped models against their published sizes, the fit
// arithmetic by hand, hardware gating per architecture, the ranking under each preference,
// and bad model files refused with the field and the rule.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "advise/advisor.hpp"
#include "advise/model.hpp"
#include "autogemm/errors.hpp"
#include "cli_test_util.hpp"

using namespace autogemm;
using namespace autogemm::advise;

namespace {

const FormatAssessment& find(const Advice& a, Format f) {
  for (const auto& s : a.formats)
    if (s.format == f) return s;
  throw std::runtime_error("format missing");
}

std::string refusal(const std::string& json) {
  try {
    parse_model_json(json, "m.json");
  } catch (const InvalidArgument& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Advise, ShippedModelsHaveTheirPublishedSizes) {
  // Published totals: 8.03B, 70.6B, 46.7B, 671B parameters.
  EXPECT_NEAR(parameter_count(load_model("llama-3-8b")) / 1e9, 8.03, 0.01);
  EXPECT_NEAR(parameter_count(load_model("llama-3-70b")) / 1e9, 70.6, 0.1);
  EXPECT_NEAR(parameter_count(load_model("mixtral-8x7b")) / 1e9, 46.7, 0.1);
  EXPECT_NEAR(parameter_count(load_model("deepseek-v3")) / 1e9, 671, 1);
  for (const auto& name : model_names()) EXPECT_FALSE(load_model(name).source.empty()) << name;
}

// Llama-3-8B in BF16 on one H100 at batch 2, context 8192, by hand:
//   weights  8,030,261,248 parameters x 2 B                                  = 16.06 GB
//   KV cache 32 layers x 2 (K, V) x 8 heads x 128 x 8192 tokens x 2 seqs x 2 B = 2.147 GB
//   activations: the widest prefill GEMM, gate+up: 16384 rows x (28672 + 4096) x 2 B x 2
TEST(Advise, FitArithmeticByHand) {
  AdviseOptions o;
  o.batch = 2;
  o.context = 8192;
  const Advice a = advise::advise(load_model("llama-3-8b"), device_preset("h100-sxm"), o);
  const FormatAssessment& bf16 = find(a, Format::bf16);
  EXPECT_DOUBLE_EQ(bf16.weight_bytes, 8030261248.0 * 2);
  EXPECT_DOUBLE_EQ(bf16.kv_bytes, 32.0 * 2 * 8 * 128 * 8192 * 2 * 2);
  EXPECT_DOUBLE_EQ(bf16.activation_bytes, 16384.0 * (28672 + 4096) * 2 * 2);
  EXPECT_DOUBLE_EQ(bf16.total_bytes, bf16.weight_bytes + bf16.kv_bytes + bf16.activation_bytes);
  EXPECT_DOUBLE_EQ(bf16.capacity_bytes,
                   double(device_preset("h100-sxm").memory_total_bytes) * 0.9);
  EXPECT_TRUE(bf16.fits);
  // An FP8 KV cache halves it where the device has FP8.
  o.fp8_kv_cache = true;
  EXPECT_DOUBLE_EQ(find(advise::advise(load_model("llama-3-8b"), device_preset("h100-sxm"), o),
                        Format::bf16).kv_bytes,
                   bf16.kv_bytes / 2);
  // Llama-3-70B in BF16 (141 GB) does not fit one H100, and fits two.
  AdviseOptions one;
  EXPECT_FALSE(find(advise::advise(load_model("llama-3-70b"), device_preset("h100-sxm"), one),
                    Format::bf16).fits);
  one.gpus = 4;
  EXPECT_TRUE(find(advise::advise(load_model("llama-3-70b"), device_preset("h100-sxm"), one),
                   Format::bf16).fits);
}

TEST(Advise, HardwareGatingPerArchitecture) {
  const ModelDescription m = load_model("llama-3-8b");
  for (const char* preset : {"a100-80g", "h100-sxm", "h200", "l40s", "b200"}) {
    const GpuInfo d = device_preset(preset);
    for (Preference p : {Preference::speed, Preference::quality, Preference::memory}) {
      AdviseOptions o;
      o.prefer = p;
      const Advice a = advise::advise(m, d, o);
      ASSERT_TRUE(a.formats.front().available) << preset;   // never recommend what it lacks
      EXPECT_EQ(find(a, Format::fp8_block).available, d.caps.fp8_tensor_cores) << preset;
      EXPECT_EQ(find(a, Format::nvfp4).available, d.caps.fp4_tensor_cores) << preset;
      // Our kernels run BF16, FP8 and the weight-only formats on sm_90a only.
      const bool sm90a = d.cc.major == 9 && d.cc.minor == 0;
      EXPECT_EQ(find(a, Format::bf16).ours, sm90a) << preset;
      EXPECT_EQ(find(a, Format::int4_weight).ours, sm90a) << preset;
      EXPECT_EQ(find(a, Format::mxfp4_weight).ours, sm90a) << preset;
      EXPECT_FALSE(find(a, Format::nvfp4).ours) << preset;
    }
  }
  EXPECT_FALSE(device_preset("a100-80g").caps.fp8_tensor_cores);
  EXPECT_TRUE(device_preset("b200").caps.fp4_tensor_cores);
}

TEST(Advise, RankingFollowsThePreference) {
  const ModelDescription m = load_model("llama-3-8b");
  const GpuInfo h100 = device_preset("h100-sxm");
  AdviseOptions o;
  o.prefer = Preference::quality;
  EXPECT_EQ(advise::advise(m, h100, o).formats.front().format, Format::bf16);
  o.prefer = Preference::memory;
  Advice a = advise::advise(m, h100, o);
  EXPECT_EQ(a.formats.front().format, Format::int4_weight);
  o.prefer = Preference::speed;
  a = advise::advise(m, h100, o);
  for (const auto& s : a.formats)
    if (s.available && s.fits) EXPECT_GE(s.decode_us, a.formats.front().decode_us);
  EXPECT_EQ(a.formats.front().verdict, "recommended");
  for (size_t i = 1; i < a.formats.size(); ++i) EXPECT_FALSE(a.formats[i].verdict.empty());
  // Quality on 70B with one H100: BF16 does not fit, so the best format that does.
  o.prefer = Preference::quality;
  a = advise::advise(load_model("llama-3-70b"), h100, o);
  EXPECT_NE(a.formats.front().format, Format::bf16);
  EXPECT_NE(find(a, Format::bf16).verdict.find("does not fit"), std::string::npos);
  // The decode step sums the model's GEMMs: BF16 Llama-3-8B at batch 1 streams 16 GB, so it
  // takes at least 16 GB at the H100's 3.35 TB/s.
  EXPECT_GT(find(advise::advise(m, h100, AdviseOptions{}), Format::bf16).decode_us, 16.06e9 / 3.35e6);
}

TEST(Advise, DecodeStepGemmsOfAMixtureOfExperts) {
  const ModelDescription m = load_model("mixtral-8x7b");
  // Batch 1: 2 of 8 experts, one row each, in every layer; the LM head once.
  auto gemms = step_gemms(m, 1, 1, 1);
  int64_t expert_up = 0;
  for (const auto& g : gemms)
    if (g.what == "expert gate+up") expert_up = g.count;
  EXPECT_EQ(expert_up, 32 * 2);
  EXPECT_EQ(gemms.back().what, "lm head");
  EXPECT_EQ(gemms.back().n, 32000);
  // Batch 64: 128 assignments over all 8 experts, 16 rows each; tensor parallel halves N.
  gemms = step_gemms(m, 64, 64, 2);
  for (const auto& g : gemms)
    if (g.what == "expert gate+up") {
      EXPECT_EQ(g.count, 32 * 8);
      EXPECT_EQ(g.m, 16);
      EXPECT_EQ(g.n, 14336);
    }
}

TEST(Advise, BadModelFilesNameTheFieldAndTheRule) {
  const std::string good = R"({"layers": 2, "hidden": 64, "intermediate": 128, "heads": 4,
                              "kv_heads": 2, "head_dim": 16, "vocab": 100})";
  EXPECT_EQ(refusal(good), "");
  EXPECT_NE(refusal(R"({"hidden": 64})").find("layers"), std::string::npos);
  EXPECT_NE(refusal(R"({"layers": -2, "hidden": 64, "intermediate": 128, "heads": 4,
                       "kv_heads": 2, "head_dim": 16, "vocab": 100})")
                .find("layers = -2"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"layers": 2, "hidden": 64, "intermediate": 128, "heads": 4,
                       "kv_heads": 3, "head_dim": 16, "vocab": 100})")
                .find("must divide heads"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"layers": 2, "hidden": 64, "intermediate": 128, "heads": 4,
                       "kv_heads": 2, "head_dim": 16, "vocab": 100, "hiden": 3})")
                .find("hiden"),
            std::string::npos);
  EXPECT_NE(refusal(R"({"layers": 2, "hidden": 64, "intermediate": 128, "heads": 4,
                       "kv_heads": 2, "head_dim": 16, "vocab": 100, "attention": "xla"})")
                .find("mha or mla"),
            std::string::npos);
  EXPECT_NE(refusal("not json").find("not JSON"), std::string::npos);
  EXPECT_THROW(load_model("no-such-model"), InvalidArgument);
  EXPECT_THROW(parse_preference("cheap"), InvalidArgument);
}

TEST(AdviseCli, PlainAndJsonAndErrors) {
  auto run = autogemm::testing::run_cli("advise --model llama-3-8b --device h100-sxm --json");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("\"recommendation\""), std::string::npos) << run.out;
  run = autogemm::testing::run_cli("advise --model llama-3-8b --device a100-80g");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_NE(run.out.find("no FP8 matrix instructions"), std::string::npos) << run.out;
  run = autogemm::testing::run_cli("advise --model nope --device h100-sxm");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  run = autogemm::testing::run_cli("advise --model llama-3-8b --device h100-sxm --batch 0");
  EXPECT_EQ(run.exit_code, 2) << run.out;
}

// docs/advise-models.md documents the model file format: every JSON example there parses, and
// the two describe the shipped models they say they do.
TEST(Advise, DocumentedModelFilesParse) {
  const std::string path = std::string(AUTOGEMM_SOURCE_DIR) + "/docs/advise-models.md";
  std::ifstream in(path);
  ASSERT_TRUE(in) << path;
  const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  std::vector<std::string> examples;
  for (std::size_t at = text.find("```json\n"); at != std::string::npos;
       at = text.find("```json\n", at)) {
    const std::size_t start = at + 8, end = text.find("```", start);
    ASSERT_NE(end, std::string::npos) << "an example that does not end";
    examples.push_back(text.substr(start, end - start));
    at = end + 3;
  }
  ASSERT_EQ(examples.size(), 2u) << path;
  const char* shipped[] = {"llama-3-8b", "mixtral-8x7b"};
  for (std::size_t i = 0; i < examples.size(); ++i) {
    const ModelDescription m = parse_model_json(examples[i], path);
    EXPECT_EQ(parameter_count(m), parameter_count(load_model(shipped[i]))) << shipped[i];
  }
}

// The note under a mixture of experts is true: grouped GEMM exists (autogemm/grouped.hpp), the
// advisor times experts one GEMM each.
TEST(AdviseCli, ExpertsNoteNamesTheGroupedGemm) {
  const auto run = autogemm::testing::run_cli("advise --model mixtral-8x7b --device h200");
  ASSERT_EQ(run.exit_code, 0) << run.out;
  EXPECT_EQ(run.out.find("no grouped GEMM"), std::string::npos) << run.out;
  EXPECT_NE(run.out.find("grouped_gemm() runs a layer's experts in one launch"), std::string::npos)
      << run.out;
}

// --gpus must split the heads: three GPUs cannot each take whole heads of Llama-3-8B's 32
// (accepted without a word before).
TEST(Advise, GpusMustSplitTheHeads) {
  const ModelDescription m = load_model("llama-3-8b");   // 32 heads, 8 KV heads
  const GpuInfo h200 = device_preset("h200");
  AdviseOptions o;
  for (int gpus : {3, 5, 12}) {
    o.gpus = gpus;
    try {
      advise::advise(m, h200, o);
      ADD_FAILURE() << gpus << " GPUs accepted";
    } catch (const InvalidArgument& e) {
      EXPECT_EQ(e.argument(), "--gpus");
      EXPECT_EQ(e.value(), std::to_string(gpus));
      EXPECT_NE(e.rule().find("heads"), std::string::npos) << e.what();
    }
  }
  for (int gpus : {1, 2, 8, 16, 32}) {   // 16 and 32: each KV head kept by 2 and 4 GPUs
    o.gpus = gpus;
    EXPECT_NO_THROW(advise::advise(m, h200, o)) << gpus;
  }
  const auto run = autogemm::testing::run_cli("advise --model llama-3-8b --device h200 --gpus 3");
  EXPECT_EQ(run.exit_code, 2) << run.out;
  EXPECT_NE(run.out.find("--gpus = 3: tensor parallelism"), std::string::npos) << run.out;
}

// MXFP4 weight-only (e2m1 with an e8m0 scale per 32): 4.25 bits a weight, the least accurate
// format (power-of-two scales), its decode GEMMs predicted on the MXFP4 kernels of the decode
// family, its prefill on the dequantised BF16 weight.
TEST(Advise, Mxfp4WeightOnlyRunsOurKernels) {
  const ModelDescription m = load_model("llama-3-8b");
  const Advice a = advise::advise(m, device_preset("h200"), AdviseOptions{});
  const FormatAssessment& mx = find(a, Format::mxfp4_weight);
  EXPECT_DOUBLE_EQ(mx.bits_per_weight, 4.25);
  EXPECT_TRUE(mx.ours);
  EXPECT_NE(mx.time_basis.find("weight-only kernels"), std::string::npos) << mx.time_basis;
  EXPECT_LT(mx.decode_us, find(a, Format::bf16).decode_us);
  EXPECT_GT(mx.weight_bytes, find(a, Format::int4_weight).weight_bytes);
  EXPECT_EQ(advise::formats_by_quality().back(), Format::mxfp4_weight);
  EXPECT_EQ(to_string(Format::mxfp4_weight), "mxfp4-weight-only");
  for (const StepGemm& g : a.decode_gemms) {
    const PredictedGemm p = predict_step_gemm(g, Format::mxfp4_weight, true, a.device);
    EXPECT_EQ(p.problem.weight_format, WeightFormat::mxfp4) << g.what;
    EXPECT_NE(p.config.find("mma"), std::string::npos) << g.what << ": " << p.config;
  }
  AdviseOptions quality;
  quality.prefer = Preference::quality;
  const Advice q = advise::advise(m, device_preset("h200"), quality);
  Format last_usable = Format::bf16;
  for (const FormatAssessment& s : q.formats)
    if (s.available && s.fits) last_usable = s.format;
  EXPECT_EQ(last_usable, Format::mxfp4_weight);   // all fit on an H200: the last by quality
}
