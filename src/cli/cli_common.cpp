#include "cli/cli_common.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstdio>
#include <optional>

#include "autogemm/errors.hpp"
#include "cli/size_list.hpp"

namespace autogemm::cli {

GpuInfo resolve_cli_device(const std::string& spec) {
  if (!spec.empty()) return resolve_device(spec);
  const GpuProfile profile = profile_gpus();
  if (!profile.gpus.empty()) return profile.gpus.front();
  fmt::print(stderr, "autogemm: note: {}; planning for preset {} (choose with --device)\n",
             profile.unavailable_reason.empty() ? "no GPU found" : profile.unavailable_reason,
             kFallbackPreset);
  return device_preset(kFallbackPreset);
}

CLI::Validator device_name_check() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        if (!value.empty()) return "";
        return fmt::format("names no device: a GPU index (0, 1, ...) or a preset ({}); leave "
                           "--device out for the default",
                           fmt::join(device_preset_names(), ", "));
      },
      "");
}

CLI::Validator seed_check() {
  return CLI::Validator(
      [](std::string& value) -> std::string {
        const bool digits = !value.empty() && value.find_first_not_of("0123456789") == std::string::npos;
        return digits ? "" : "must be a non-negative integer (0..2^64 - 1)";
      },
      "");
}

void ProblemOptions::add_to(CLI::App& command) {
  command.add_option("--m", m, "rows of A and D: a size, a list 64,128 or a range start:end:step")
      ->required();
  command.add_option("--n", n, "columns of B and D (list/range like --m)")->required();
  command.add_option("--k", k, "inner dimension (list/range like --m)")->required();
  command.add_option("--dtype", dtype, "input type: bf16, fp16 or fp8 (e4m3, block-scaled)")
      ->capture_default_str();
  command.add_option("--layout", layout,
                     "storage of A and B: nt (both K-major), nn, tn, tt (first letter A)")
      ->capture_default_str();
  command.add_option("--lda", lda, "leading dimension of A in elements (0 = packed)");
  command.add_option("--ldb", ldb, "leading dimension of B in elements (0 = packed)");
  command.add_option("--ldd", ldd, "leading dimension of D in elements (0 = packed)");
  command.add_option("--out-dtype", out_dtype,
                     "type of D: bf16, fp16, fp32, or fp8 (e4m3, quantised by the epilogue with "
                     "one scale per row per 128 columns)");
  command.add_option("--scaling", scaling,
                     "FP8 scales: block (1x128 A, 128x128 B; the default), per_tensor, rowwise "
                     "(one per row of A and one per row of B), or 1x128 (one per row per 128 of "
                     "K on both: weight gradients)");
}

void ProblemOptions::add_weights_to(CLI::App& command) {
  command.add_option("--weights", weights,
                     "B is a packed weight-only format, dequantised in registers: int4-g128, "
                     "int4-g128-zp (GPTQ/AWQ zeros), int8 (per channel) or mxfp4 "
                     "(autogemm/weights.hpp); bf16 activations");
}

std::vector<GemmProblem> ProblemOptions::problems() const {
  const auto shapes = shape_product(parse_size_list("--m", m), parse_size_list("--n", n),
                                    parse_size_list("--k", k));
  std::vector<GemmProblem> out;
  out.reserve(shapes.size());
  std::optional<Scaling> fp8_scaling;
  if (!scaling.empty()) {
    for (Scaling s : {Scaling::block_1x128_128x128, Scaling::per_tensor, Scaling::rowwise,
                      Scaling::block_1x128_1x128})
      if (scaling == to_string(s) || (scaling == "block" && s == Scaling::block_1x128_128x128) ||
          (scaling == "1x128" && s == Scaling::block_1x128_1x128))
        fp8_scaling = s;
    if (!fp8_scaling)
      throw InvalidArgument("--scaling", scaling, "expected block, per_tensor, rowwise or 1x128");
  }
  std::optional<DType> d_type;
  if (!out_dtype.empty()) {
    d_type = parse_dtype(out_dtype);
    if (!d_type || !(*d_type == DType::bf16 || *d_type == DType::fp16 || *d_type == DType::fp32 ||
                     *d_type == DType::e4m3))
      throw InvalidArgument("--out-dtype", out_dtype, "expected bf16, fp16, fp32 or fp8 (e4m3)");
  }
  std::optional<WeightFormat> weight_format;
  if (!weights.empty()) {
    weight_format = parse_weight_format(weights);
    if (!weight_format)
      throw InvalidArgument("--weights", weights, "expected int4-g128, int4-g128-zp, int8 or mxfp4");
  }
  for (const GemmShape& s : shapes) {
    GemmProblem p = make_problem(s.m, s.n, s.k, dtype, layout, lda, ldb, ldd);
    if (d_type) p.d_type = *d_type;
    if (weight_format) {
      if (p.a_type != DType::bf16)
        throw InvalidArgument("--dtype", dtype, "--weights takes bf16 activations");
      p.weight_format = weight_format;
      validate(p);
    }
    if (fp8_scaling) {
      if (p.scaling == Scaling::none)
        throw InvalidArgument("--scaling", scaling, "scales are for --dtype fp8");
      p.scaling = *fp8_scaling;
      validate(p);
    }
    out.push_back(p);
  }
  return out;
}

void EpilogueOptions::add_to(CLI::App& command) {
  command.add_option("--bias", bias,
                     "fused epilogue: add a bias vector bias[n] of this type (bf16 or fp32)");
  command.add_option("--activation", activation,
                     "fused epilogue: relu, gelu_tanh (gelu), gelu_erf or silu, after the bias");
  command.add_flag("--row-scale", row_scale,
                   "fused epilogue: multiply row m by row_scale[m] (fp32, per token)");
  command.add_flag("--col-scale", col_scale,
                   "fused epilogue: multiply column n by col_scale[n] (fp32, per channel)");
  command.add_flag("--gated", gated,
                   "fused epilogue: gated MLP, D = act(gate) * up with N / 2 columns (B's rows "
                   "gate and up interleaved in runs of 8; --activation silu: SwiGLU)");
}

Epilogue EpilogueOptions::epilogue() const {
  Epilogue e;
  if (!bias.empty()) {
    const std::optional<DType> t = parse_dtype(bias);
    if (!t || (*t != DType::bf16 && *t != DType::fp32))
      throw InvalidArgument("--bias", bias, "the bias is bf16 or fp32");
    e.bias = *t;
  }
  if (!activation.empty()) {
    const std::optional<Activation> a = parse_activation(activation);
    if (!a)
      throw InvalidArgument("--activation", activation,
                            "expected none, relu, gelu_tanh (gelu), gelu_erf or silu");
    e.activation = *a;
  }
  e.row_scale = row_scale;
  e.col_scale = col_scale;
  e.gated = gated;
  return e;
}

std::vector<GemmProblem> EpilogueOptions::apply(std::vector<GemmProblem> problems) const {
  const Epilogue e = epilogue();
  for (GemmProblem& p : problems) {
    p.epilogue = e;
    validate(p);
  }
  return problems;
}

GemmProblem make_problem(int64_t m, int64_t n, int64_t k, const std::string& dtype,
                         const std::string& layout, int64_t lda, int64_t ldb, int64_t ldd) {
  GemmProblem p;
  p.m = m;
  p.n = n;
  p.k = k;
  const auto input = parse_dtype(dtype);
  if (!input || !(*input == DType::bf16 || *input == DType::fp16 || *input == DType::e4m3 ||
                  *input == DType::e5m2))
    throw InvalidArgument("--dtype", dtype, "expected bf16, fp16 or fp8");
  p.a_type = p.b_type = *input;
  if (*input == DType::e4m3 || *input == DType::e5m2) {
    p.d_type = DType::bf16;
    p.scaling = Scaling::block_1x128_128x128;
  } else {
    p.d_type = *input;
  }
  const auto parsed_layout = parse_layout(layout);
  if (!parsed_layout) throw InvalidArgument("--layout", layout, "expected nt, nn, tn or tt");
  p.layout = *parsed_layout;
  p.lda = lda;
  p.ldb = ldb;
  p.ldd = ldd;
  validate(p);
  return p;
}

KernelSpec config_spec(const GemmProblem& problem, const std::string& config,
                       const GpuInfo& device) {
  try {
    return make_kernel_spec(problem, GemmConfig::parse(config), device);
  } catch (const InvalidArgument& e) {
    if (e.argument() != "config") throw;
    throw InvalidArgument("--config", e.value(), e.rule());
  }
}

std::string dtype_name(const GemmProblem& problem) {
  if (problem.a_type == DType::e4m3 || problem.a_type == DType::e5m2) return "fp8";
  return std::string(to_string(problem.a_type));
}

nlohmann::json problem_json(const GemmProblem& p) {
  nlohmann::json j = {{"m", p.m},
                    {"n", p.n},
                    {"k", p.k},
                    {"dtype", dtype_name(p)},
                    {"layout", to_string(p.layout)},
                    {"a_type", to_string(p.a_type)},
                    {"b_type", to_string(p.b_type)},
                    {"d_type", to_string(p.d_type)},
                    {"scaling", to_string(p.scaling)},
                    {"lda", p.lda_or_packed()},
                    {"ldb", p.ldb_or_packed()},
                    {"ldd", p.ldd_or_packed()},
                    {"flops", p.flops()},
                    {"grouping", to_string(p.grouping)},
                    {"num_groups", p.num_groups},
                    {"expected_m", p.expected_group_rows()},
                    {"epilogue", p.epilogue.describe()}};
  // Experts' weight gradients are grouped along K: what a group is expected to have is tokens.
  if (p.grouping == Grouping::k_contiguous) j["expected_group_k"] = p.expected_group_k();
  return j;
}

nlohmann::json config_json(const GemmConfig& c) {
  return {{"describe", c.describe()},
          {"instruction", to_string(c.instruction)},
          {"block_m", c.block_m},
          {"block_n", c.block_n},
          {"block_k", c.block_k},
          {"num_stages", c.num_stages},
          {"num_consumers", c.num_consumers},
          {"cluster_m", c.cluster_m},
          {"cluster_n", c.cluster_n},
          {"multicast", to_string(c.multicast)},
          {"persistent", c.persistent},
          {"raster_group", c.raster_group},
          {"raster_order", to_string(c.raster_order)},
          {"split_k", c.split_k},
          {"promotion_buffers", c.promotion_buffers},
          {"ordered_issue", c.ordered_issue},
          {"pingpong", c.pingpong},
          {"n_tail_kernel", c.n_tail_kernel},
          {"swap_ab", c.swap_ab}};
}

namespace {

// null where the operand is read in place.
nlohmann::json operand_copy_json(const OperandCopy& c) {
  if (!c.active()) return nullptr;
  return {{"rows", c.rows},
          {"row_elements", c.row_elements},
          {"source_ld", c.source_ld},
          {"padded_ld", c.padded_ld},
          {"bytes", c.bytes()}};
}

}  // namespace

nlohmann::json spec_json(const KernelSpec& spec) {
  nlohmann::json kernels = nlohmann::json::array();
  for (const KernelLaunch& k : spec.kernels)
    kernels.push_back({{"text", k.text},
                       {"n", k.problem.n},
                       {"first_column", k.first_column},
                       {"grid_ctas", k.grid_ctas},
                       {"threads_per_cta", k.threads_per_cta},
                       {"cluster_size", k.cluster_size},
                       {"smem_bytes", k.smem_bytes},
                       {"work_items", k.work_items},
                       {"warp_specialized", k.fields.warp_specialized},
                       {"load_path", to_string(k.fields.load_path)},
                       {"store_path", to_string(k.fields.store_path)},
                       {"producer_registers", k.fields.producer_registers},
                       {"consumer_registers", k.fields.consumer_registers},
                       {"launch_dependents", k.fields.launch_dependents},
                       {"waits_for_primary", k.fields.waits_for_primary}});
  return {{"text", spec.text},
          {"vendor", spec.vendor},
          {"reason", spec.reason},
          {"kernels", kernels},
          {"split_k_workspace_bytes", spec.split_k.sync_bytes() + spec.split_k.partial_bytes()},
          {"a_scales_k_block_major", spec.a_scales_k_block_major},
          {"a_scale_copy_bytes", spec.a_scale_copy_bytes},
          {"copy_a", operand_copy_json(spec.copy_a)},
          {"copy_b", operand_copy_json(spec.copy_b)}};
}

nlohmann::json prediction_json(const Prediction& p) {
  return {{"num_tiles", p.num_tiles},
          {"waves", p.waves},
          {"last_wave_utilization", p.last_wave_utilization},
          {"busy_sms", p.busy_sms},
          {"compute_us", p.compute_us},
          {"operand_copy_us", p.operand_copy_us},
          {"memory_us", p.memory_us},
          {"l2_us", p.l2_us},
          {"store_us", p.store_us},
          {"fixed_us", p.fixed_us},
          {"mma_efficiency", p.mma_efficiency},
          {"dram_bytes", p.dram_bytes},
          {"l2_bytes", p.l2_bytes},
          {"time_us", p.time_us},
          {"tflops", p.tflops}};
}

}  // namespace autogemm::cli
