#pragma once
// One file per `autogemm` sub-command; each registers itself on the app and runs from its
// callback. Callbacks throw autogemm::Error for bad input; main() prints it and exits 2.
#include <CLI/CLI.hpp>

namespace autogemm::cli {

void add_profile_command(CLI::App& app);   // cmd_profile.cpp
void add_plan_command(CLI::App& app);      // cmd_plan.cpp
void add_kernels_command(CLI::App& app);   // cmd_kernels.cpp
void add_bench_command(CLI::App& app);     // cmd_bench.cpp
void add_ladder_command(CLI::App& app);    // cmd_ladder.cpp
void add_warmup_command(CLI::App& app);    // cmd_warmup.cpp
void add_compile_command(CLI::App& app);   // cmd_compile.cpp
void add_fuzz_command(CLI::App& app);      // cmd_fuzz.cpp
void add_advise_command(CLI::App& app);    // cmd_advise.cpp
void add_tune_command(CLI::App& app);      // cmd_tune.cpp
void add_fit_cost_command(CLI::App& app);  // cmd_fit_cost.cpp

}  // namespace autogemm::cli
