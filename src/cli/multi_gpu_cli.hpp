#pragma once
// What `plan --gpus` (cmd_plan_split.cpp) and `bench --gpus` (cmd_bench_multi.cpp) share: they
// live beside their command's other options, so they read the ones they take from the command
// and refuse the others.
#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace autogemm::cli {

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
