// `autogemm plan`: the configuration the planner picks for a problem on a device, its
// predicted time, and with --top the ranked candidates and the rejected ones with why.
#include <fmt/format.h>

#include <iostream>
#include <memory>

#include "autogemm/errors.hpp"
#include "autogemm/grouped.hpp"
#include "autogemm/plan.hpp"
#include "autogemm/quantize.hpp"
#include "autogemm/wgrad.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_plan_split.hpp"
#include "cli/commands.hpp"
#include "cli/multi_gpu_cli.hpp"
#include "hw/device_json.hpp"
#include "plan/gemm_search.hpp"

namespace autogemm::cli {

namespace {

struct PlanOptions {
  ProblemOptions problem;
  EpilogueOptions epilogue;
  // Grouped GEMM (autogemm/grouped.hpp): --grouped contiguous|masked --groups G
  // --m-per-group E; --m is then the rows of A and D (contiguous) or max_m (masked), by
  // default what G groups of E rows take (runs padded to 128; max_m E rounded up to 64).
  std::string grouping;
  int64_t groups = 0, m_per_group = 0;
  std::string device;
  int top = -1;  // -1: not given; 0: all
  bool json = false;
  // --wgrad: the weight gradient dW [M, N] += dY^T X over K tokens (autogemm/wgrad.hpp). With
  // --groups G, G experts' gradients along the tokens (grouped_weight_gradient_problem): K is
  // the tokens of all experts (by default G x --tokens-per-group), tokens_per_group the tokens
  // an expert is expected to get (by default K / G), for planning.
  bool wgrad = false;
  int64_t tokens_per_group = 0;
  // --accumulate: D += A B in place (beta = 1, C is D), as `bench --accumulate` runs it; the
  // planner prices the epilogue's read of C.
  bool accumulate = false;
};

// The first `top` entries (all for top == 0).
template <typename T>
std::size_t shown(const std::vector<T>& list, int top) {
  return top == 0 ? list.size() : std::min<std::size_t>(list.size(), std::size_t(top));
}

std::string megabytes(double bytes) { return fmt::format("{:.1f} MB", bytes / 1e6); }

void print_device(const GpuInfo& d) {
  fmt::print("device     {}{}: {}, {} SMs, {} KB smem/block, {} MB L2, {:.0f} GB/s, "
             "{:.0f} TFLOP/s bf16 dense\n",
             d.preset.empty() ? d.name : d.preset,
             d.preset.empty() ? fmt::format(" (GPU {})", d.ordinal) : fmt::format(" ({})", d.name),
             d.caps.arch_name.empty() ? fmt::format("cc {}.{}", d.cc.major, d.cc.minor)
                                      : d.caps.arch_name,
             d.sm_count, d.smem_per_block_optin_bytes / 1024, d.l2_bytes / (1024 * 1024),
             d.memory_bandwidth_gbps, d.peak_bf16_tflops());
}

void print_prediction(const Prediction& p, bool vendor, int sm_count) {
  fmt::print("predicted  {:.1f} us = {:.4g} TFLOP/s\n", p.time_us, p.tflops);
  if (!vendor)
    fmt::print("           {} tiles in {} wave{}; the last wave keeps {} of {} SMs busy ({:.0f}%)\n",
               p.num_tiles, p.waves, p.waves == 1 ? "" : "s", p.busy_sms, sm_count,
               100 * p.last_wave_utilization);
  const std::string l2 =
      vendor ? "" : fmt::format("L2 {:.1f} us ({}), D store {:.1f} us, ", p.l2_us,
                                megabytes(p.l2_bytes), p.store_us);
  fmt::print("           {}compute {:.1f} us (matrix units at {:.0f}%), DRAM {:.1f} us ({}), "
             "{}fixed {:.1f} us\n",
             vendor ? "roofline: " : "", p.compute_us, 100 * p.mma_efficiency, p.memory_us,
             megabytes(p.dram_bytes), l2, p.fixed_us);
  if (p.operand_copy_us > 0)
    fmt::print("           copying A or B into rows TMA can describe first: {:.1f} us\n",
               p.operand_copy_us);
}

// What a call launches: each kernel with its grid, and the workspaces.
void print_spec(const KernelSpec& spec) {
  for (const KernelLaunch& k : spec.kernels)
    fmt::print("kernel     {}: {} CTAs of {} threads{}, {} B smem, {} work items{}\n", k.text,
               k.grid_ctas, k.threads_per_cta,
               k.cluster_size > 1 ? fmt::format(" in clusters of {}", k.cluster_size) : "",
               k.smem_bytes, k.work_items,
               k.first_column > 0 ? fmt::format(", columns {}..", k.first_column) : "");
  if (spec.split_k.counters > 0)
    fmt::print("workspace  split-K: {} counters, {} flags, {} of fp32 partial sums\n",
               spec.split_k.counters, spec.split_k.flags, megabytes(double(spec.split_k.partial_bytes())));
  for (const auto& [name, copy] : {std::pair{"A", &spec.copy_a}, std::pair{"B", &spec.copy_b}})
    if (copy->active())
      fmt::print("workspace  {} copied first into {} rows of {} elements (ld {} -> {}): {}\n", name,
                 copy->rows, copy->padded_ld, copy->source_ld, copy->padded_ld,
                 megabytes(double(copy->bytes())));
  if (spec.a_scales_k_block_major)
    fmt::print("workspace  A scales copied k-block-major first: {}\n",
               megabytes(double(spec.a_scale_copy_bytes)));
}

void print_plan(const Plan& plan, int top) {
  const GemmProblem& p = plan.problem;
  const Candidate& best = plan.best();
  const bool vendor = best.config.instruction == Instruction::vendor;
  fmt::print("problem    M={} N={} K={} {} -> {}, layout {}, lda {} ldb {} ldd {}\n", p.m, p.n,
             p.k, dtype_name(p), to_string(p.d_type), to_string(p.layout), p.lda_or_packed(),
             p.ldb_or_packed(), p.ldd_or_packed());
  if (p.weight_format)
    fmt::print("weights    B packed as {}: {:.2f} MB with its scales{} (bf16 would be {:.2f} MB)\n",
               to_string(*p.weight_format), p.b_bytes() / 1e6,
               *p.weight_format == WeightFormat::int4_g128_zp ? " and zeros" : "",
               2.0 * double(p.n) * double(p.k) / 1e6);
  if (p.grouping == Grouping::k_contiguous)
    fmt::print("wgrad      {} experts: dW [{}, {}, {}] += dY_g^T X_g, expert g over its run of "
               "the {} tokens ({} expected per expert): dY [{}, {}] and X [{}, {}] as stored "
               "(token-major), the runs' ends (group_ends) on the device, C is dW\n",
               p.num_groups, p.num_groups, p.m, p.n, p.k, p.expected_group_k(), p.k, p.m, p.k,
               p.n);
  else if (p.layout == Layout::tn && p.reads_c && p.d_type == DType::fp32)
    fmt::print("wgrad      dW [{}, {}] += dY^T X over {} tokens: dY [{}, {}] and X [{}, {}] as "
               "stored (token-major), C is dW\n",
               p.m, p.n, p.k, p.k, p.m, p.k, p.n);
  else if (p.scaling == Scaling::block_1x128_1x128 && p.reads_c && p.d_type == DType::fp32)
    fmt::print("wgrad      dW [{}, {}] += dY^T X over {} tokens in FP8: dY^T [{}, {}] and X^T [{}, "
               "{}] e4m3 with one scale per 128 tokens, as quantize_fp8_1x128_transposed writes "
               "them, C is dW\n",
               p.m, p.n, p.k, p.m, p.k, p.n, p.k);
  else if (p.reads_c)
    fmt::print("C          read by the epilogue: D = alpha A B + beta C (C [{}, {}] {}, ldc {})\n",
               p.m, p.d_cols(), to_string(p.d_type), p.ldc_or_packed());
  if (p.grouping == Grouping::contiguous || p.grouping == Grouping::masked)
    fmt::print("grouped    {}: {} groups, {} rows expected per group; M is {}; B is [{}, {}, {}]\n",
               to_string(p.grouping), p.num_groups, p.expected_group_rows(),
               p.grouping == Grouping::masked ? "max_m, the rows of each group"
                                              : "all groups' rows, runs padded to 128",
               p.num_groups, p.n, p.k);
  if (p.scaling == Scaling::rowwise)
    fmt::print("scaling    rowwise: the main loop sums unscaled products; the epilogue multiplies "
               "row m by scale_a[m] and column n by scale_b[n]\n");
  if (const Epilogue e = kernel_epilogue(p); !e.empty())
    fmt::print("epilogue   {}: D = {}, fused\n", e.describe(), e.formula());
  if (p.d_type == DType::e4m3)
    fmt::print("output     e4m3, quantised by the epilogue: one fp32 scale per row per 128 columns "
               "(amax / 448) into d_scale [{}, {}], the next FP8 GEMM's A scales\n",
               p.m, fp8_scale_count_1x128(1, p.d_cols()));
  print_device(plan.device);
  fmt::print("path       {}\n", plan.path_reason);
  if (vendor)
    fmt::print("config     cuBLASLt (the library picks its own tiling)\n");
  else
    fmt::print("config     {}\n", best.config.describe());
  print_spec(plan.spec);
  print_prediction(best.prediction, vendor, plan.device.sm_count);
  if (top < 0) return;

  const std::size_t n_candidates = shown(plan.candidates, top);
  fmt::print("\ncandidates ({} of {}, in {})\n", n_candidates, plan.candidates.size(),
             plan::kCandidateOrder);
  fmt::print("{:>5}  {:<38} {:>9} {:>8} {:>7} {:>5} {:>5} {:>9} {:>9} {:>9} {:>7} {:>5}\n",
             "rank", "config", "time_us", "TFLOP/s", "tiles", "waves", "busy", "compute",
             "dram", "l2", "fixed", "mma%");
  for (std::size_t i = 0; i < n_candidates; ++i) {
    const auto& [config, pred] = plan.candidates[i];
    fmt::print("{:>5}  {:<38} {:>9.2f} {:>8.1f} {:>7} {:>5} {:>5} {:>9.2f} {:>9.2f} {:>9.2f} "
               "{:>7.2f} {:>5.0f}\n",
               i + 1, config.describe(), pred.time_us, pred.tflops, pred.num_tiles, pred.waves,
               pred.busy_sms, pred.compute_us, pred.memory_us, pred.l2_us, pred.fixed_us,
               100 * pred.mma_efficiency);
  }
  const std::size_t n_rejected = shown(plan.rejected, top);
  fmt::print("\nrejected ({} of {})\n", n_rejected, plan.rejected.size());
  for (std::size_t i = 0; i < n_rejected; ++i)
    fmt::print("  {:<38} {}\n", plan.rejected[i].config.describe(), plan.rejected[i].reason);
}

nlohmann::json plan_json(const Plan& plan, int top) {
  nlohmann::json j = {{"problem", problem_json(plan.problem)},
                      {"device", hw::to_json(plan.device)},
                      {"config", config_json(plan.best().config)},
                      {"spec", spec_json(plan.spec)},
                      {"prediction", prediction_json(plan.best().prediction)},
                      {"path_reason", plan.path_reason}};
  if (top >= 0) {
    auto& candidates = j["candidates"] = nlohmann::json::array();
    for (std::size_t i = 0; i < shown(plan.candidates, top); ++i)
      candidates.push_back({{"config", config_json(plan.candidates[i].config)},
                            {"prediction", prediction_json(plan.candidates[i].prediction)}});
    auto& rejected = j["rejected"] = nlohmann::json::array();
    for (std::size_t i = 0; i < shown(plan.rejected, top); ++i)
      rejected.push_back({{"config", config_json(plan.rejected[i].config)},
                          {"reason", plan.rejected[i].reason}});
  }
  return j;
}

// The options' problems, made grouped when --grouped is given.
std::vector<GemmProblem> planned_problems(PlanOptions options) {
  if (options.wgrad) {
    if (!options.grouping.empty())
      throw InvalidArgument("--grouped", options.grouping,
                            "groups rows along M; experts' weight gradients are grouped along "
                            "the tokens: --wgrad --groups G [--tokens-per-group T]");
    if (options.problem.layout != "nt")
      throw InvalidArgument("--layout", options.problem.layout,
                            "--wgrad sets it: dY and X are token-major (tn)");
    if (!options.epilogue.epilogue().empty())
      throw InvalidArgument("--wgrad", "true", "a weight gradient has no fused epilogue");
    if (options.problem.m.empty())
      throw InvalidArgument("--m", "(not given)", "is required: --m out features, --n in "
                                                  "features, --k tokens");
    if (options.groups > 0 && options.problem.k.empty())
      options.problem.k = std::to_string(options.groups * options.tokens_per_group);
    std::vector<GemmProblem> problems;
    for (const GemmProblem& p : options.problem.problems()) {
      const DType dw_type = options.problem.out_dtype.empty() ? DType::fp32 : p.d_type;
      problems.push_back(
          options.groups > 0
              ? grouped_weight_gradient_problem(p.k, p.m, p.n, options.groups, p.a_type,
                                                /*accumulate=*/true, dw_type,
                                                options.tokens_per_group)
              : weight_gradient_problem(p.k, p.m, p.n, p.a_type, /*accumulate=*/true, dw_type));
    }
    return problems;
  }
  if (options.grouping.empty()) {
    if (options.problem.m.empty())
      throw InvalidArgument("--m", "(not given)",
                            "is required (or --grouped with --groups and --m-per-group)");
    std::vector<GemmProblem> problems = options.problem.problems();
    for (GemmProblem& p : problems) p.reads_c = options.accumulate;
    return options.epilogue.apply(problems);
  }
  const Grouping grouping = options.grouping == "masked" ? Grouping::masked : Grouping::contiguous;
  if (options.groups < 1)
    throw InvalidArgument("--groups", std::to_string(options.groups), "must be >= 1 with --grouped");
  if (options.m_per_group < 1)
    throw InvalidArgument("--m-per-group", std::to_string(options.m_per_group),
                          "must be >= 1 with --grouped (the rows a group is expected to have)");
  auto round_up = [](int64_t x, int64_t a) { return (x + a - 1) / a * a; };
  if (options.problem.m.empty())
    options.problem.m = std::to_string(
        grouping == Grouping::masked ? round_up(options.m_per_group, kMaskedMaxMAlignment)
                                     : options.groups * round_up(options.m_per_group,
                                                                 kGroupedRowAlignment));
  std::vector<GemmProblem> problems;
  for (GemmProblem p : options.problem.problems()) {
    p.grouping = grouping;
    p.num_groups = options.groups;
    p.expected_m = options.m_per_group;
    p.epilogue = options.epilogue.epilogue();
    p.reads_c = options.accumulate;
    validate(p);
    problems.push_back(p);
  }
  return problems;
}

// --groups and --m-per-group describe the groups of a grouped GEMM, --groups and
// --tokens-per-group the experts of a grouped weight gradient (--wgrad): without them the plan
// is of one GEMM, and they were ignored without a word. --k may be left out only where the
// experts give it (--wgrad --groups G --tokens-per-group T: K = G x T).
void check_grouped_options(const CLI::App& command, const PlanOptions& options) {
  const bool given_k = command.get_option("--k")->count() > 0;
  const bool given_tokens = command.get_option("--tokens-per-group")->count() > 0;
  if (options.wgrad && command.get_option("--groups")->count() > 0) {
    if (options.groups < 1)
      throw InvalidArgument("--groups", std::to_string(options.groups),
                            "must be >= 1: the experts whose weight gradients are planned");
    if (command.get_option("--m-per-group")->count() > 0)
      throw InvalidArgument("--m-per-group", option_text(command, "--m-per-group"),
                            "is the rows of a grouped GEMM's group; an expert's weight gradient "
                            "takes --tokens-per-group");
    if (given_tokens && options.tokens_per_group < 1)
      throw InvalidArgument("--tokens-per-group", std::to_string(options.tokens_per_group),
                            "must be >= 1: the tokens an expert is expected to get");
    if (!given_k && !given_tokens)
      throw InvalidArgument("--k", "(not given)",
                            "is the tokens of all experts: give --k, or --tokens-per-group T "
                            "for K = groups x T");
    return;
  }
  if (given_tokens)
    throw InvalidArgument("--tokens-per-group", option_text(command, "--tokens-per-group"),
                          "goes with --wgrad --groups G (the experts of a grouped weight "
                          "gradient)");
  if (!given_k) throw InvalidArgument("--k", "(not given)", "is required");
  if (!options.grouping.empty()) return;
  for (const char* name : {"--groups", "--m-per-group"})
    if (command.get_option(name)->count() > 0)
      throw InvalidArgument(name, option_text(command, name),
                            "goes with --grouped contiguous|masked (the groups of a grouped "
                            "GEMM; --groups also with --wgrad: experts' weight gradients); "
                            "without them the plan is of one GEMM");
}

void run_plan(const PlanOptions& options) {
  // Problems first: a bad size is reported before any device query.
  std::vector<GemmProblem> problems;
  try {
    problems = planned_problems(options);
  } catch (const InvalidArgument& e) {  // the problem's C is what --accumulate asked for
    if (e.argument() != "reads_c") throw;
    throw InvalidArgument("--accumulate", "true", e.rule());
  }
  const GpuInfo device = resolve_cli_device(options.device);
  std::vector<Plan> plans;
  plans.reserve(problems.size());
  for (const GemmProblem& problem : problems) plans.push_back(plan_gemm(problem, device));

  if (options.json) {
    // Always a list, one element per problem (also for one): one shape for every caller.
    nlohmann::json out = nlohmann::json::array();
    for (const Plan& plan : plans) out.push_back(plan_json(plan, options.top));
    std::cout << out.dump(2) << "\n";
    return;
  }
  for (std::size_t i = 0; i < plans.size(); ++i) {
    if (i > 0) fmt::print("\n");
    print_plan(plans[i], options.top);
  }
}

}  // namespace

void add_plan_command(CLI::App& app) {
  auto options = std::make_shared<PlanOptions>();
  auto* cmd = app.add_subcommand(
      "plan", "Choose a GEMM configuration for a problem and device, and explain why");
  options->problem.add_to(*cmd);
  options->problem.add_weights_to(*cmd);
  options->epilogue.add_to(*cmd);
  // A grouped plan computes M from the groups when --m is not given (planned_problems), a
  // grouped weight gradient K from its experts (check_grouped_options says when --k may be out).
  cmd->get_option("--m")->required(false);
  cmd->get_option("--k")
      ->required(false)
      ->description("inner dimension (list/range like --m); with --wgrad the tokens, with "
                    "--wgrad --groups the tokens of all experts (default: groups x "
                    "--tokens-per-group)");
  cmd->add_option("--device", options->device,
                  "GPU index (0, 1, ...) or preset name (h100-sxm, h200, a100-80g, b200, ...); "
                  "default: GPU 0, else h100-sxm")
      ->check(device_name_check());
  cmd->add_option("--top", options->top,
                  "also list the N best candidates and N rejected configurations (0 = all)")
      ->check([](const std::string& value) -> std::string {
        // CLI11 reports this as a parse error naming --top; -1 is our "not given" marker.
        return !value.empty() && value[0] == '-' ? "must be >= 0 (0 = all)" : std::string();
      });
  cmd->add_flag("--json", options->json,
                "print JSON instead of text: a list with one plan per problem");
  cmd->add_option("--grouped", options->grouping,
                  "plan a grouped (MoE) GEMM: contiguous (the groups' rows concatenated, runs "
                  "padded to 128) or masked ([groups, max_m, K] with masked_m rows valid); "
                  "needs --groups and --m-per-group; --m is then the rows of A (contiguous) or "
                  "max_m (masked), by default what the groups take")
      ->check(CLI::IsMember({"contiguous", "masked"}));
  cmd->add_flag("--accumulate", options->accumulate,
                "plan D += A B in place (beta = 1, C is D), as `bench --accumulate` runs it: the "
                "epilogue reads C, said in the text (--wgrad always does)");
  cmd->add_flag("--wgrad", options->wgrad,
                "plan a weight gradient: dW [M, N] += dY^T X over K tokens, dY [K, M] and X [K, N] "
                "token-major (layout tn), dW fp32 (autogemm/wgrad.hpp); with --groups G, G "
                "experts' gradients in one call (dW [G, M, N], each expert over its own run of "
                "the K tokens: M a multiple of 64)");
  cmd->add_option("--groups", options->groups,
                  "grouped: the number of groups (experts); with --wgrad the experts, and --k "
                  "the tokens of all of them");
  cmd->add_option("--tokens-per-group", options->tokens_per_group,
                  "with --wgrad --groups: the tokens an expert is expected to get, for planning "
                  "(default K / groups); without --k, K = groups x this");
  cmd->add_option("--m-per-group", options->m_per_group,
                  "grouped: the rows a group is expected to have (tokens per expert)");
  // --gpus G: the GEMM split over G GPUs instead (cmd_plan_split.cpp).
  auto split = add_split_plan_options(*cmd);
  cmd->callback([options, split, cmd] {
    check_gpus_option(*cmd);
    check_grouped_options(*cmd, *options);
    if (wants_split_plan(*cmd)) return run_split_plan(*cmd, *split, options->problem.problems());
    run_plan(*options);
  });
}

}  // namespace autogemm::cli
