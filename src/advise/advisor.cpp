#include "advise/advisor.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <tuple>

#include "autogemm/errors.hpp"
#include "autogemm/plan.hpp"
#include "plan/gemm_search.hpp"

namespace autogemm::advise {

namespace {

int quality_rank(Format f) {
  const std::vector<Format>& order = formats_by_quality();
  return int(std::find(order.begin(), order.end(), f) - order.begin());
}

// Bits per GEMM weight, scales included: block-scaled FP8 one fp32 scale per 128 x 128 block;
// INT8 and INT4 weight-only one bf16 scale per 128 weights; NVFP4 one e4m3 scale per 16;
// MXFP4 one e8m0 scale per 32.
// Embeddings, the LM head and norms stay BF16 in every format.
double bits_per_weight(Format f) {
  switch (f) {
    case Format::bf16: return 16;
    case Format::fp8_block: return 8 + 32.0 / (128 * 128);
    case Format::fp8_tensor: return 8;
    case Format::int8_weight: return 8 + 16.0 / 128;
    case Format::int4_weight: return 4 + 16.0 / 128;
    case Format::nvfp4: return 4 + 8.0 / 16;
    case Format::mxfp4_weight: return 4 + 8.0 / 32;
  }
  return 16;
}

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// DRAM efficiency of a streaming kernel and the launch cost, as the cost model takes them
// (src/plan/cost_model.cpp: 0.75, 4 us).
constexpr double kStreamingEfficiency = 0.75;
constexpr double kLaunchUs = 4.0;

double bytes_per_us(const GpuInfo& d) { return d.memory_bandwidth_gbps * 1e3 * kStreamingEfficiency; }

// predict_step_gemm's times, once per shape and format.
class GemmTimer {
 public:
  GemmTimer(const GpuInfo& device) : device_(device) {}
  double time_us(const StepGemm& g, Format f, bool ours) {
    const auto key = std::make_tuple(g.m, g.n, g.k, int(f));
    if (auto it = cache_.find(key); it != cache_.end()) return it->second;
    const double t = predict_step_gemm(g, f, ours, device_).time_us;
    cache_[key] = t;
    return t;
  }

 private:
  const GpuInfo& device_;
  std::map<std::tuple<int64_t, int64_t, int64_t, int>, double> cache_;
};

// Attention over the KV cache and the rest of the layer, memory-bound: a decode step reads the
// whole cache once; a prefill's causal attention does 2 x T^2 x heads x head_dim flops per
// sequence per layer (QK^T and PV, half of the square), at half the BF16 peak.
double attention_us(const ModelDescription& m, const GpuInfo& d, double kv_bytes, int64_t batch,
                    int64_t tokens, bool prefill, int gpus) {
  if (!prefill) return kv_bytes / gpus / bytes_per_us(d) + m.layers * kLaunchUs;
  const double flops = 2.0 * double(tokens) * tokens * m.heads * m.head_dim * m.layers * batch;
  return flops / gpus / (d.peak_bf16_tflops() * 1e6 * 0.5) + m.layers * kLaunchUs;
}

double kv_cache_bytes(const ModelDescription& m, const AdviseOptions& o, bool fp8) {
  const double per_token = m.attention == Attention::mla
                               ? double(m.kv_lora_rank + m.qk_rope_dim)
                               : 2.0 * m.kv_heads * m.head_dim;
  return per_token * m.layers * double(o.batch) * o.context * (fp8 ? 1 : 2);
}

// Tensor parallelism gives each GPU whole attention heads, and whole KV heads or copies of one
// (more GPUs than KV heads: each is kept by gpus / kv_heads GPUs). Latent attention keeps one
// compressed KV per token, which every GPU holds.
void check_head_split(const ModelDescription& m, int gpus) {
  if (m.heads % gpus != 0)
    throw InvalidArgument("--gpus", std::to_string(gpus),
                          fmt::format("tensor parallelism gives each GPU whole attention heads: "
                                      "{} has {} heads, which do not split {} ways",
                                      m.name, m.heads, gpus));
  if (m.attention == Attention::mha && m.kv_heads % gpus != 0 && gpus % m.kv_heads != 0)
    throw InvalidArgument("--gpus", std::to_string(gpus),
                          fmt::format("tensor parallelism gives each GPU whole KV heads or "
                                      "copies of one: {} has {} KV heads, which neither split {} "
                                      "ways nor divide {}",
                                      m.name, m.kv_heads, gpus, gpus));
}

std::string gigabytes(double bytes) { return fmt::format("{:.1f} GB", bytes / 1e9); }

}  // namespace

std::string_view to_string(Format f) {
  switch (f) {
    case Format::bf16: return "bf16";
    case Format::fp8_block: return "fp8-block";
    case Format::fp8_tensor: return "fp8-tensor";
    case Format::int8_weight: return "int8-weight-only";
    case Format::int4_weight: return "int4-weight-only";
    case Format::nvfp4: return "nvfp4";
    case Format::mxfp4_weight: return "mxfp4-weight-only";
  }
  return "?";
}

// BF16 is the reference; block-scaled FP8 and INT8 weight-only keep within ~0.1% of BF16's
// accuracy on published evaluations (DeepSeek-V3 trains in block-scaled FP8); one FP8 scale per
// tensor is coarser; 4-bit formats lose the most: NVFP4's 16-element FP8 scales less than
// INT4's 128-element BF16-scaled groups, and MXFP4 most, its scales powers of two (a group's
// largest value lands anywhere in the top binade of e2m1's range, up to a bit of precision
// lost; OCP MX 1.0 and NVIDIA's NVFP4 notes), unless the model was trained for it (gpt-oss).
const std::vector<Format>& formats_by_quality() {
  static const std::vector<Format> order = {Format::bf16,        Format::fp8_block,
                                            Format::int8_weight, Format::fp8_tensor,
                                            Format::nvfp4,       Format::int4_weight,
                                            Format::mxfp4_weight};
  return order;
}

bool weight_only(Format f) {
  return f == Format::int4_weight || f == Format::int8_weight || f == Format::mxfp4_weight;
}

std::string_view to_string(Preference p) {
  return p == Preference::speed ? "speed" : p == Preference::quality ? "quality" : "memory";
}

Preference parse_preference(const std::string& text) {
  if (text == "speed") return Preference::speed;
  if (text == "quality") return Preference::quality;
  if (text == "memory") return Preference::memory;
  throw InvalidArgument("--prefer", text, "one of speed, quality, memory");
}

std::vector<StepGemm> step_gemms(const ModelDescription& m, int64_t tokens, int64_t batch,
                                 int gpus) {
  std::vector<StepGemm> out;
  auto add = [&](const char* what, int64_t rows, int64_t n, int64_t k, int64_t count) {
    if (count > 0 && n > 0 && k > 0) out.push_back({what, rows, ceil_div(n, gpus), k, count});
  };
  const int64_t L = m.layers;
  if (m.attention == Attention::mla) {
    if (m.q_lora_rank > 0) add("attention q down", tokens, m.q_lora_rank, m.hidden, L);
    add("attention q up", tokens, m.heads * (m.qk_nope_dim + m.qk_rope_dim),
        m.q_lora_rank > 0 ? m.q_lora_rank : m.hidden, L);
    add("attention kv down", tokens, m.kv_lora_rank + m.qk_rope_dim, m.hidden, L);
    add("attention kv up", tokens, m.heads * (m.qk_nope_dim + m.v_head_dim), m.kv_lora_rank, L);
    add("attention out", tokens, m.hidden, m.heads * m.v_head_dim, L);
  } else {
    add("attention qkv", tokens, (m.heads + 2 * m.kv_heads) * m.head_dim, m.hidden, L);
    add("attention out", tokens, m.hidden, m.heads * m.head_dim, L);
  }
  const int64_t dense = m.experts > 0 ? m.dense_layers : L;
  add("mlp gate+up", tokens, 2 * m.intermediate, m.hidden, dense);
  add("mlp down", tokens, m.hidden, m.intermediate, dense);
  if (m.experts > 0) {
    const int64_t moe_layers = L - dense;
    // Each token goes to active_experts experts: the step touches min(experts, tokens x
    // active) of them, each with its share of the tokens (an even routing).
    const int64_t touched = std::min(m.experts, tokens * m.active_experts);
    const int64_t rows = ceil_div(tokens * m.active_experts, touched);
    add("router", tokens, m.experts, m.hidden, moe_layers);
    add("expert gate+up", rows, 2 * m.moe_intermediate, m.hidden, moe_layers * touched);
    add("expert down", rows, m.hidden, m.moe_intermediate, moe_layers * touched);
    if (m.shared_experts > 0) {
      add("shared expert gate+up", tokens, 2 * m.moe_intermediate * m.shared_experts, m.hidden,
          moe_layers);
      add("shared expert down", tokens, m.hidden, m.moe_intermediate * m.shared_experts,
          moe_layers);
    }
  }
  add("lm head", batch, m.vocab, m.hidden, 1);   // the last token of each sequence
  return out;
}

// The planner's predicted time of one GEMM, in the format's types, or a roofline where
// autogemm has no kernel: the weights streamed at the cost model's DRAM rate against the
// flops at BF16 rate (weight-only formats dequantise to BF16), plus a launch.
// Weight-only formats run autogemm's weight-only kernels up to plan::kWeightOnlyMaxM rows (K a
// whole number of groups); past them, as a deployment does, the weight dequantised once to BF16.
PredictedGemm predict_step_gemm(const StepGemm& g, Format f, bool ours, const GpuInfo& device) {
  PredictedGemm out;
  if (ours) {
    GemmProblem& p = out.problem;
    p.m = g.m, p.n = g.n, p.k = g.k;
    if (weight_only(f)) {
      const WeightFormat w = f == Format::int4_weight   ? WeightFormat::int4_g128
                             : f == Format::mxfp4_weight ? WeightFormat::mxfp4
                                                         : WeightFormat::int8_channel;
      if (g.m <= plan::kWeightOnlyMaxM && g.k % weight_gemm_k_multiple(w) == 0)
        p.weight_format = w;
    }
    if (f == Format::fp8_block || f == Format::fp8_tensor) {
      p.a_type = p.b_type = DType::e4m3;
      p.k = std::max<int64_t>(16, (p.k + 15) / 16 * 16);   // FP8 rows need 16 bytes
      p.scaling = f == Format::fp8_block ? Scaling::block_1x128_128x128 : Scaling::per_tensor;
    }
    const Plan plan = plan_gemm(p, device);
    out.config = plan.best().config.describe();
    out.time_us = plan.best().prediction.time_us;
    return out;
  }
  const double weight_bytes = double(g.n) * g.k * bits_per_weight(f) / 8;
  const double io_bytes = 2.0 * double(g.m) * (g.k + g.n);
  const double memory_us = (weight_bytes + io_bytes) / bytes_per_us(device);
  const double compute_us = 2.0 * g.m * g.n * g.k / (device.peak_bf16_tflops() * 1e6 * 0.75);
  out.config = "roofline";
  out.time_us = std::max(memory_us, compute_us) + kLaunchUs;
  return out;
}

Advice advise(const ModelDescription& model, const GpuInfo& device, const AdviseOptions& o) {
  if (o.gpus < 1) throw InvalidArgument("--gpus", std::to_string(o.gpus), "must be >= 1");
  check_head_split(model, o.gpus);
  if (o.batch < 1) throw InvalidArgument("--batch", std::to_string(o.batch), "must be >= 1");
  if (o.context < 1) throw InvalidArgument("--context", std::to_string(o.context), "must be >= 1");
  if (device.memory_total_bytes <= 0)
    throw InvalidArgument("--device", device.name, "its memory size is unknown");
  Advice a;
  a.model = model;
  a.device = device;
  a.options = o;
  const bool sm90a = device.cc.major == 9 && device.cc.minor == 0;
  const int64_t params = parameter_count(model);
  const double embedding_params = double(bf16_parameter_count(model));
  a.decode_gemms = step_gemms(model, o.batch, o.batch, o.gpus);
  const auto prefill_gemms = step_gemms(model, o.batch * o.context, o.batch, o.gpus);
  GemmTimer timer(device);
  for (Format f : formats_by_quality()) {
    FormatAssessment s;
    s.format = f;
    s.bits_per_weight = bits_per_weight(f);
    const bool fp8 = f == Format::fp8_block || f == Format::fp8_tensor;
    if (fp8 && !device.caps.fp8_tensor_cores) {
      s.available = false;
      s.gate = fmt::format("{} has no FP8 matrix instructions (sm_89+)", device.caps.arch_name);
    }
    if (f == Format::nvfp4 && !device.caps.fp4_tensor_cores) {
      s.available = false;
      s.gate = fmt::format("{} has no FP4 matrix instructions (sm_100+)", device.caps.arch_name);
    }
    s.ours = sm90a && (f == Format::bf16 || fp8 || weight_only(f));
    s.weight_bytes = (double(params) - embedding_params) * s.bits_per_weight / 8 +
                     embedding_params * 2;
    const bool fp8_kv = o.fp8_kv_cache && device.caps.fp8_tensor_cores;
    s.kv_bytes = kv_cache_bytes(model, o, fp8_kv);
    // The widest activation of the prefill (a whole gate+up output and its input, BF16), the
    // workspace a forward pass holds at once.
    double widest = 0;
    for (const StepGemm& g : prefill_gemms) widest = std::max(widest, double(g.m) * (g.n + g.k));
    s.activation_bytes = 2.0 * widest * 2;
    s.total_bytes = s.weight_bytes / o.gpus + s.kv_bytes / o.gpus + s.activation_bytes;
    s.capacity_bytes = double(device.memory_total_bytes) * (1 - o.headroom);
    s.fits = s.total_bytes <= s.capacity_bytes;
    // A GEMM the planner refuses (its operands past the GPU's memory) comes from the batch,
    // and for the prefill the context: the message names those.
    auto step_us = [&](const std::vector<StepGemm>& gemms, bool prefill) {
      double t = 0;
      for (const StepGemm& g : gemms) {
        try {
          t += double(g.count) * timer.time_us(g, f, s.ours);
        } catch (const InvalidArgument& e) {
          throw InvalidArgument(
              prefill ? "--batch x --context" : "--batch",
              prefill ? fmt::format("{} x {}", o.batch, o.context) : std::to_string(o.batch),
              fmt::format("the {} step's GEMM {} ({} x {} x {}, {}) cannot run: {}",
                          prefill ? "prefill" : "decode", g.what, g.m, g.n, g.k, to_string(f),
                          e.rule()));
        }
      }
      return t;
    };
    s.decode_gemm_us = step_us(a.decode_gemms, false);
    s.prefill_gemm_us = step_us(prefill_gemms, true);
    s.decode_us = s.decode_gemm_us +
                  attention_us(model, device, s.kv_bytes, o.batch, o.batch, false, o.gpus);
    s.prefill_us = s.prefill_gemm_us +
                   attention_us(model, device, s.kv_bytes, o.batch, o.context, true, o.gpus);
    s.time_basis = s.ours && weight_only(f)
                       ? "autogemm's planner: its weight-only kernels for the decode, the "
                         "dequantised BF16 weight for the prefill"
                   : s.ours ? "autogemm's planner (its kernels on this device)"
                   : sm90a ? "roofline: no kernel of autogemm's for this format"
                           : "roofline: autogemm's kernels need sm_90a; a vendor library";
    a.formats.push_back(s);
  }
  // Rank the usable ones by the preference, then the rest.
  auto usable = [](const FormatAssessment& s) { return s.available && s.fits; };
  auto better = [&](const FormatAssessment& x, const FormatAssessment& y) {
    if (usable(x) != usable(y)) return usable(x);
    switch (o.prefer) {
      case Preference::speed:
        if (x.decode_us != y.decode_us) return x.decode_us < y.decode_us;
        break;
      case Preference::memory:
        if (x.total_bytes != y.total_bytes) return x.total_bytes < y.total_bytes;
        break;
      case Preference::quality: break;
    }
    return quality_rank(x.format) < quality_rank(y.format);
  };
  std::stable_sort(a.formats.begin(), a.formats.end(), better);
  const FormatAssessment& best = a.formats.front();
  if (!usable(best)) {
    double smallest = best.total_bytes;
    for (const auto& s : a.formats)
      if (s.available) smallest = std::min(smallest, s.total_bytes);
    a.recommendation = fmt::format(
        "nothing fits: the smallest format needs {} per GPU of {} usable on {} GPU(s); use more "
        "GPUs, a shorter context or a smaller batch",
        gigabytes(smallest), gigabytes(best.capacity_bytes), o.gpus);
  } else {
    a.recommendation = fmt::format(
        "{}: {} (decode step {:.0f} us, {} per GPU of {}), by preference for {}",
        to_string(best.format),
        o.prefer == Preference::speed     ? "the fastest decode step that fits"
        : o.prefer == Preference::quality ? "the most accurate format that fits"
                                          : "the smallest footprint that fits",
        best.decode_us, gigabytes(best.total_bytes), gigabytes(best.capacity_bytes),
        to_string(o.prefer));
  }
  for (auto& s : a.formats) {
    if (&s == &a.formats.front() && usable(s)) {
      s.verdict = "recommended";
    } else if (!s.available) {
      s.verdict = "not available: " + s.gate;
    } else if (!s.fits) {
      s.verdict = fmt::format("does not fit: {} per GPU > {} usable", gigabytes(s.total_bytes),
                              gigabytes(s.capacity_bytes));
    } else if (o.prefer == Preference::speed) {
      s.verdict = fmt::format("slower: decode {:.0f} us against {:.0f} us", s.decode_us,
                              best.decode_us);
    } else if (o.prefer == Preference::memory) {
      s.verdict = fmt::format("larger: {} against {}", gigabytes(s.total_bytes),
                              gigabytes(best.total_bytes));
    } else {
      s.verdict = fmt::format("less accurate than {}", to_string(best.format));
    }
  }
  return a;
}

}  // namespace autogemm::advise
