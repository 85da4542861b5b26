// `autogemm fit-cost --sweep FILE[,FILE] [--holdout FILE[,FILE]] --device D --out FILE.json`:
// fits the cost model's rates to the timings `autogemm tune --sweep --sweep-csv` wrote on one
// GPU (plan/calibration_fit.hpp), reports the predictions' errors and how often the predicted
// fastest configuration is within 5% of the measured fastest, before and after, on the fitted
// rows and on held-out ones, and writes the calibration file the library reads for that device
// (hw/cost_calibration.hpp; data/cost-model/<preset>.json is kept in the repository).
// scripts/gpu-fit-cost.sh runs the sweeps and the fit on a GPU machine.
#include <fmt/format.h>

#include <chrono>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "autogemm/errors.hpp"
#include "autogemm/version.hpp"
#include "cli/cli_common.hpp"
#include "cli/cmd_bench.hpp"
#include "cli/commands.hpp"
#include "plan/calibration_fit.hpp"

namespace autogemm::cli {

namespace {

struct FitCostOptions {
  std::string sweep, holdout, device, out, command;
};

std::vector<plan::SweepSample> load_samples(const std::string& option, const std::string& list) {
  std::vector<plan::SweepSample> out;
  std::stringstream files(list);
  for (std::string path; std::getline(files, path, ',');) {
    if (path.empty()) continue;
    std::ifstream in(path);
    if (!in) throw InvalidArgument(option, path, "cannot be read");
    std::stringstream text;
    text << in.rdbuf();
    const auto samples = plan::parse_sweep_csv(text.str(), path);
    out.insert(out.end(), samples.begin(), samples.end());
  }
  return out;
}

nlohmann::json quality_json(const plan::FitQuality& q) {
  return {{"samples", q.samples},
          {"rows", q.rows},
          {"mean_log_error", q.mean_log_error},
          {"median_error", q.median_error},
          {"p90_error", q.p90_error},
          {"rows_picked_within_5pct", q.rows_picked_within_5pct}};
}

void print_quality(const char* what, const plan::FitQuality& before,
                   const plan::FitQuality& after) {
  fmt::print("{:<9} {:>5} rows {:>6} configs  median error {:5.1f}% -> {:5.1f}%  p90 {:5.1f}% -> "
             "{:5.1f}%  picks within 5% {}/{} -> {}/{}\n",
             what, after.rows, after.samples, 100 * before.median_error, 100 * after.median_error,
             100 * before.p90_error, 100 * after.p90_error, before.rows_picked_within_5pct,
             before.rows, after.rows_picked_within_5pct, after.rows);
}

// Where the model as written is off, by the term that bounds each prediction.
void print_term_errors(const char* what, const std::vector<plan::SweepSample>& samples,
                       const GpuInfo& device) {
  GpuInfo as_written = device;
  as_written.cost = CostCalibration{};
  fmt::print("{:<9} by the term bounding the prediction (model as written):", what);
  for (const plan::TermError& t : plan::error_by_bounding_term(samples, as_written))
    fmt::print("  {} {} x{:.2f} ({:.0f}%)", t.term, t.samples, t.median_ratio,
               100 * t.median_error);
  fmt::print("\n");
}

void run_fit_cost(const FitCostOptions& o) {
  const auto fit = load_samples("--sweep", o.sweep);
  const auto holdout = load_samples("--holdout", o.holdout);
  if (!o.out.empty()) check_writable("--out", o.out);
  GpuInfo device = resolve_cli_device(o.device);
  // A measured GPU is recorded under the preset of its product (the file's name in
  // data/cost-model/), and found again by that product name when measured.
  if (device.preset.empty())
    for (const std::string& key : device_preset_names())
      if (device_preset(key).name == device.name) device.preset = key;
  const plan::FitResult r = plan::fit_calibration(fit, holdout, device);
  fmt::print("cost model fitted for {} ({}): mma x{:.3f}, l2 x{:.3f}, dram x{:.3f}, fixed x{:.3f}\n",
             device.preset.empty() ? device.name : device.preset, device.name, r.calibration.mma,
             r.calibration.l2, r.calibration.dram, r.calibration.fixed);
  print_quality("fitted", r.before, r.after);
  if (!holdout.empty()) print_quality("held out", r.holdout_before, r.holdout_after);
  fmt::print("measured / predicted, median, with the median error, per bounding term:\n");
  print_term_errors("fitted", fit, device);
  if (!holdout.empty()) print_term_errors("held out", holdout, device);
  const std::string not_worth = plan::calibration_not_worth_keeping(r);
  if (!not_worth.empty())
    fmt::print("not worth keeping as the device's calibration: {} (smaller errors alone do not "
               "change what runs)\n", not_worth);
  else if (!device.preset.empty() && !o.out.empty())
    fmt::print("keep it as data/cost-model/{}.json (embedded for that preset at the next build)\n",
               device.preset);
  if (o.out.empty()) return;
  const auto now = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  char date[16];
  std::strftime(date, sizeof date, "%Y-%m-%d", std::gmtime(&now));
  nlohmann::json j = {
      {"device", device.preset},
      {"name", device.name},
      {"calibration",
       {{"mma", r.calibration.mma},
        {"l2", r.calibration.l2},
        {"dram", r.calibration.dram},
        {"fixed", r.calibration.fixed}}},
      {"fitted", {{"files", o.sweep}, {"before", quality_json(r.before)},
                  {"after", quality_json(r.after)}}},
      {"command", o.command.empty() ? fmt::format("autogemm fit-cost --sweep {}{} --device {}",
                                                  o.sweep,
                                                  o.holdout.empty() ? "" : " --holdout " + o.holdout,
                                                  o.device)
                                    : o.command},
      {"date", date},
      {"autogemm", version()}};
  if (!holdout.empty())
    j["held_out"] = {{"files", o.holdout}, {"before", quality_json(r.holdout_before)},
                     {"after", quality_json(r.holdout_after)}};
  std::ofstream(o.out) << j.dump(1) << "\n";
  fmt::print("wrote {}\n", o.out);
}

}  // namespace

void add_fit_cost_command(CLI::App& app) {
  auto o = std::make_shared<FitCostOptions>();
  auto* cmd = app.add_subcommand(
      "fit-cost", "Fit the cost model's rates to a GPU's timings (autogemm tune --sweep "
                  "--sweep-csv) and write its calibration file");
  cmd->add_option("--sweep", o->sweep, "sweep CSV files to fit on, comma-separated")->required();
  cmd->add_option("--holdout", o->holdout,
                  "sweep CSV files of other shapes, to report the fit on (not fitted)");
  cmd->add_option("--device", o->device,
                  "the preset (h200, h100-sxm, ...) or GPU index the sweeps ran on; default: "
                  "GPU 0, else h100-sxm")
      ->check(device_name_check());
  cmd->add_option("--out", o->out,
                  "write the calibration here (data/cost-model/<preset>.json is read for the "
                  "preset; any file through AUTOGEMM_COST_CALIBRATION)");
  cmd->add_option("--command", o->command,
                  "the command that made the sweeps, recorded in the file (scripts/gpu-fit-cost.sh "
                  "passes it)");
  cmd->callback([o] { run_fit_cost(*o); });
}

}  // namespace autogemm::cli
