#pragma once
// What `plan --gpus` (cmd_plan_split.cpp) and `bench --gpus` (cmd_bench_multi.cpp) share: they
// live beside their command's other options, so they read the ones they take from the command
// and refuse the others. The bound on --gpus serves `advise --gpus` too.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace autogemm::cli {

// The most GPUs --gpus takes: one NVLink domain, of which GB200 NVL72's 72 GPUs is the largest
// built. Past one domain the GPUs talk over a network that the link presets (nvlink, pcie) do
// not describe, and the plans' per-pair link tables grow with the square of the count: 100000
// GPUs filled a machine's memory before this bound.
inline constexpr int kMaxGpus = 72;

// Throws InvalidArgument("--gpus", <value>, "must be 1..kMaxGpus ...") unless the --gpus given
// on `command` is in that range; nothing when --gpus was not given. Each command that takes
// --gpus calls it before anything reads the count.
void check_gpus_option(const CLI::App& command);

// Throws InvalidArgument(<option>, <its value>, "is not taken with <mode>: ...") for the first
// option given on `command` that is not in `taken` (names as "--suite").
void refuse_options_except(const CLI::App& command, const std::vector<std::string>& taken,
                           const std::string& mode);

// True when one of `names` was given on `command`.
bool any_option_given(const CLI::App& command, const std::vector<std::string>& names);

// The value given for `name`, or `fallback` when it was not given.
std::string option_text(const CLI::App& command, const std::string& name,
                        const std::string& fallback = "");

}  // namespace autogemm::cli
