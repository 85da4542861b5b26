// `autogemm advise --model FILE|NAME --device 0|PRESET [--gpus N] [--batch B] [--context T]
// [--prefer speed|quality|memory] [--kv bf16|fp8] [--json]`: which weight format to deploy a
// model in on this device, with every format's bytes, fit and predicted step times, from the
// planner's predictions of the model's GEMMs (src/advise/advisor.hpp).
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "advise/advisor.hpp"
#include "autogemm/errors.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"

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
                       {"prefill_us", s.prefill_us},
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
    fmt::print("Experts are timed as one GEMM each (a call per expert): autogemm has no "
               "grouped GEMM yet, so each pays a launch.\n");
}

void run_advise(const AdviseCliOptions& o) {
  const advise::ModelDescription model = advise::load_model(o.model);
  advise::AdviseOptions options;
  options.gpus = o.gpus;
  options.batch = o.batch;
  options.context = o.context;
  options.prefer = advise::parse_preference(o.prefer);
  if (o.kv != "bf16" && o.kv != "fp8") throw InvalidArgument("--kv", o.kv, "bf16 or fp8");
  options.fp8_kv_cache = o.kv == "fp8";
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
  cmd->add_option("--device", o->device, "GPU index or preset; default: GPU 0, else h100-sxm");
  cmd->add_option("--gpus", o->gpus, "GPUs, tensor parallel")->capture_default_str();
  cmd->add_option("--batch", o->batch, "sequences decoded together")->capture_default_str();
  cmd->add_option("--context", o->context, "tokens per sequence (KV cache, prefill)")
      ->capture_default_str();
  cmd->add_option("--prefer", o->prefer, "speed, quality or memory")->capture_default_str();
  cmd->add_option("--kv", o->kv, "KV cache type: bf16 or fp8")->capture_default_str();
  cmd->add_flag("--json", o->json, "print JSON");
  cmd->callback([o] { run_advise(*o); });
}

}  // namespace autogemm::cli
