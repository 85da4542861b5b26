#pragma once
// The quantisation and deployment advisor: for a model on a device (or a preset), each weight
// format's bytes, KV cache and workspace, whether it fits, and the predicted time of one decode
// step and of a prefill, summed over the model's GEMMs from the planner's own predictions
// (the cost model behind `autogemm plan`), plus a memory-bound estimate for attention. Formats
// the device lacks the instructions for are never recommended (the capability table decides).
#include <cstdint>
#include <string>
#include <vector>

#include "advise/model.hpp"
#include "autogemm/device.hpp"
#include "autogemm/problem.hpp"

namespace autogemm::advise {

enum class Format { bf16, fp8_block, fp8_tensor, int8_weight, int4_weight, nvfp4, mxfp4_weight };
enum class Preference { speed, quality, memory };

std::string_view to_string(Format f);
// Every format, most accurate first (the advisor's order for ties and for --prefer quality).
const std::vector<Format>& formats_by_quality();
// Weight-only formats: autogemm's weight-only kernels (WeightFormat) for the decode.
bool weight_only(Format f);
std::string_view to_string(Preference p);
Preference parse_preference(const std::string& text);   // throws InvalidArgument

struct AdviseOptions {
  int gpus = 1;                  // tensor parallel: each GEMM's N split over the GPUs
  int64_t batch = 1;             // sequences decoded together
  int64_t context = 4096;        // tokens per sequence: the KV cache's length, the prefill's
  Preference prefer = Preference::speed;
  bool fp8_kv_cache = false;     // KV cache in FP8 (where the device has FP8) instead of BF16
  double headroom = 0.10;        // share of memory kept free (allocator, CUDA context, graphs)
};

// One GEMM of a step, `count` times (layers, experts), M x N x K per GPU.
struct StepGemm {
  std::string what;              // "attention qkv", "expert gate+up", ...
  int64_t m = 0, n = 0, k = 0;
  int64_t count = 0;
};

struct FormatAssessment {
  Format format = Format::bf16;
  double bits_per_weight = 0;    // of the GEMM weights, scales included
  bool available = true;         // the device has the instructions
  std::string gate;              // why not, when not available
  bool ours = false;             // autogemm has a kernel for it on this device
  double weight_bytes = 0, kv_bytes = 0, activation_bytes = 0, total_bytes = 0;
  double capacity_bytes = 0;     // gpus x memory x (1 - headroom)
  bool fits = false;
  double decode_us = 0, prefill_us = 0;   // one decode step; a prefill of `context` tokens
  // Their GEMM parts: the sums over the step's GEMMs of count x predict_step_gemm().time_us
  // (the rest of decode_us and prefill_us is the attention estimate).
  double decode_gemm_us = 0, prefill_gemm_us = 0;
  std::string time_basis;        // what the times come from
  std::string verdict;           // "recommended: ..." or why not
};

struct Advice {
  ModelDescription model;
  GpuInfo device;
  AdviseOptions options;
  std::vector<StepGemm> decode_gemms;          // BF16 shapes of one decode step
  std::vector<FormatAssessment> formats;       // recommended first, then the rest ranked
  std::string recommendation;                  // one sentence
};

// The GEMMs of one step over `tokens` tokens (decode: the batch; prefill: batch x context)
// on each of `gpus` GPUs.
std::vector<StepGemm> step_gemms(const ModelDescription& model, int64_t tokens, int64_t batch,
                                 int gpus);

// One GEMM of a step as the advisor predicts it in a format. Where autogemm has a kernel for
// the format on the device (`ours`): the problem it plans (the format's input types, FP8
// block-scaled or per-tensor with K rounded up to 16, bf16 output, layout nt, packed), the
// planner's best configuration and its predicted time per call (plan_gemm(problem,
// device).best()). Otherwise a roofline: no problem planned, config "roofline". The advisor's
// step times sum count x time_us of exactly these; `autogemm advise --measure` runs `problem`.
struct PredictedGemm {
  GemmProblem problem;
  std::string config;            // GemmConfig::describe() of the planned one, or "roofline"
  double time_us = 0;
};
PredictedGemm predict_step_gemm(const StepGemm& gemm, Format format, bool ours,
                                const GpuInfo& device);

Advice advise(const ModelDescription& model, const GpuInfo& device, const AdviseOptions& options);

}  // namespace autogemm::advise
