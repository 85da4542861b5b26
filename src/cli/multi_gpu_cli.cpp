// Option helpers of the multi-GPU modes (multi_gpu_cli.hpp).
#include "cli/multi_gpu_cli.hpp"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>

#include "autogemm/errors.hpp"

namespace autogemm::cli {

void refuse_options_except(const CLI::App& command, const std::vector<std::string>& taken,
                           const std::string& mode) {
  for (const CLI::Option* option : command.get_options()) {
    if (option->count() == 0) continue;
    const std::string name = option->get_name();
    if (name.rfind("--", 0) != 0 || name == "--help") continue;
    if (std::find(taken.begin(), taken.end(), name) != taken.end()) continue;
    const std::vector<std::string>& values = option->results();
    throw InvalidArgument(name, values.empty() ? "given" : fmt::format("{}", fmt::join(values, ",")),
                          fmt::format("is not taken with {}, which takes {}", mode,
                                      fmt::join(taken, ", ")));
  }
}

void check_gpus_option(const CLI::App& command) {
  const CLI::Option* option = command.get_option_no_throw("--gpus");
  if (option == nullptr || option->count() == 0 || option->results().empty()) return;
  const long long gpus = option->as<long long>();
  if (gpus < 1 || gpus > kMaxGpus)
    throw InvalidArgument("--gpus", option->results().back(),
                          fmt::format("must be 1..{}: the GPUs of one NVLink domain (GB200 "
                                      "NVL72's {} is the largest)",
                                      kMaxGpus, kMaxGpus));
}

bool any_option_given(const CLI::App& command, const std::vector<std::string>& names) {
  for (const std::string& name : names)
    if (command.get_option(name)->count() > 0) return true;
  return false;
}

std::string option_text(const CLI::App& command, const std::string& name,
                        const std::string& fallback) {
  const CLI::Option* option = command.get_option_no_throw(name);
  if (option == nullptr || option->count() == 0 || option->results().empty()) return fallback;
  return option->results().back();
}

}  // namespace autogemm::cli
