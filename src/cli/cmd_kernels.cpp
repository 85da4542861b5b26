// `autogemm kernels [--device 0|<preset>] [--json]`: which implementation and execution path
// each kernel class uses on a device, with a one-line reason (select_kernels).
#include <fmt/format.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <nlohmann/json.hpp>
#include <string>

#include "autogemm/device.hpp"
#include "autogemm/plan.hpp"
#include "cli/cli_common.hpp"
#include "cli/commands.hpp"

namespace autogemm::cli {
namespace {

struct KernelsOptions {
  std::string device_spec;  // empty: the first GPU, or the fallback preset without one
  bool json = false;
};

GpuInfo default_device() {
  const GpuProfile profile = profile_gpus();
  if (!profile.gpus.empty()) return resolve_device("0");
  fmt::print(stderr, "autogemm: note: {}; showing the {} preset, choose another "
                     "with --device <preset>\n",
             profile.unavailable_reason, kFallbackPreset);
  return resolve_device(kFallbackPreset);
}

std::string device_title(const GpuInfo& d) {
  const std::string source = d.ordinal >= 0 ? fmt::format("GPU {}", d.ordinal)
                                            : fmt::format("preset {}", d.preset);
  return fmt::format("{} ({}, compute capability {}.{}, {})", d.name, source, d.cc.major,
                     d.cc.minor, d.caps.arch_name.empty() ? "unknown arch" : d.caps.arch_name);
}

void print_table(const GpuInfo& d, const std::vector<KernelChoice>& choices) {
  fmt::print("Kernels for {}\n\n", device_title(d));
  size_t class_width = 5, impl_width = 14, path_width = 4;
  for (const KernelChoice& c : choices) {
    class_width = std::max(class_width, to_string(c.kernel_class).size());
    impl_width = std::max(impl_width, c.implementation.size());
    path_width = std::max(path_width, c.path.size());
  }
  fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", "class", class_width, "implementation", impl_width,
             "path", path_width, "reason");
  fmt::print("{:-<{}}  {:-<{}}  {:-<{}}  {:-<6}\n", "", class_width, "", impl_width, "",
             path_width, "");
  for (const KernelChoice& c : choices)
    fmt::print("{:<{}}  {:<{}}  {:<{}}  {}\n", to_string(c.kernel_class), class_width,
               c.implementation, impl_width, c.path, path_width, c.reason);
}

void print_json(const std::vector<KernelChoice>& choices) {
  nlohmann::json list = nlohmann::json::array();
  for (const KernelChoice& c : choices)
    list.push_back({{"class", std::string(to_string(c.kernel_class))},
                    {"implementation", c.implementation},
                    {"path", c.path},
                    {"reason", c.reason}});
  fmt::print("{}\n", list.dump(2));
}

void run_kernels(const KernelsOptions& options) {
  const GpuInfo device =
      options.device_spec.empty() ? default_device() : resolve_device(options.device_spec);
  const std::vector<KernelChoice> choices = select_kernels(device);
  if (options.json)
    print_json(choices);
  else
    print_table(device, choices);
}

}  // namespace

void add_kernels_command(CLI::App& app) {
  auto options = std::make_shared<KernelsOptions>();
  auto* cmd = app.add_subcommand(
      "kernels", "Show which implementation and execution path each kernel class uses on a device");
  cmd->add_option("--device", options->device_spec,
                  "GPU index (0, 1, ...) or preset name (h100-sxm, a100-80g, b200, ...); default: "
                  "GPU 0, or h100-sxm when no GPU is present")
      ->check(device_name_check());
  cmd->add_flag("--json", options->json, "Print a JSON list of {class, implementation, path, reason}");
  cmd->callback([options] { run_kernels(*options); });
}

}  // namespace autogemm::cli
